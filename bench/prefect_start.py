"""Two commands starting their temporary Prefect servers at once on a fresh PREFECT_HOME (issue 44, M8:
one failed with Prefect's SQLite migration traceback in 2 of 7 trials): both must answer.

    python bench/prefect_start.py [TRIALS]     # default 3; about 35 s a trial on 2 busy cores

Prints per trial whether each server answered a flow-run query (its migrations done) and the seconds.
The test suite checks the same start lock with a stand-in server (tests/security/test_round4_concurrency.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

STARTER = r"""
import json, time, urllib.request
t0 = time.monotonic()
from defsentflow.tasks.server import local_api
with local_api() as url:
    ask = urllib.request.Request(url + "/flow_runs/filter", data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(ask, timeout=30) as answer:
        print(json.dumps({"status": answer.status, "seconds": round(time.monotonic() - t0, 1)}), flush=True)
"""


def trial() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="prefect-start-") as home:
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env["PREFECT_HOME"] = home
        procs = [subprocess.Popen([sys.executable, "-c", STARTER], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            results.append(out.strip() if proc.returncode == 0 else f"FAILED {proc.returncode}: {err.strip()[-300:]}")
        return results


def main(trials: int) -> None:
    ok = 0
    for i in range(trials):
        t0 = time.monotonic()
        results = trial()
        ok += all(r.startswith("{") and json.loads(r)["status"] == 200 for r in results)
        print(f"trial {i + 1}: {results} in {time.monotonic() - t0:.0f}s", flush=True)
    print(f"both servers answered in {ok} of {trials} trials")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
