"""A command's temporary Prefect server on a fresh Prefect home (a new data root): the database
migrated by the server itself (Prefect's way, and defsentflow's until 2026-11-28) against a copy of
the migrated template the first server left in the cache (tasks/server.py).

    python bench/server_start.py [REPEATS]     # default 3; about 15 s a repeat on 2 cores

Each start is ``local_api()`` on a new PREFECT_HOME, then one API read; the server's CPU is read from
this process's waited-for children when it has stopped. Prints medians and the ratio.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def start(home: Path) -> tuple[float, float]:
    """(seconds until it answered, the server's CPU seconds) of one temporary server on ``home``."""
    from defsentflow.tasks import server as runtime

    os.environ["PREFECT_HOME"] = str(home)
    c0, t0 = _children_cpu(), time.monotonic()
    with runtime.local_api() as url:
        answered = time.monotonic() - t0
        ask = urllib.request.Request(url + "/flow_runs/filter", data=b"{}", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(ask, timeout=30) as r:
            r.read()
    return answered, _children_cpu() - c0


def main(repeats: int) -> None:
    os.environ.pop("PREFECT_API_URL", None)
    base = Path(tempfile.mkdtemp(prefix="server-start-"))
    runs: dict[str, list[tuple[float, float]]] = {"migrated by the server": [], "copy of the template": []}
    for i in range(repeats):
        os.environ["DEFSENTFLOW_CACHE_DIR"] = str(base / f"empty-cache-{i}")  # no template: the server migrates
        runs["migrated by the server"].append(start(base / f"fresh-{i}"))
        runs["copy of the template"].append(start(base / f"seeded-{i}"))  # the template the start above left
    med = {}
    for name, rs in runs.items():
        med[name] = (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
        print(f"{name:24s} answered in {med[name][0]:5.2f} s, server CPU {med[name][1]:5.2f} s "
              f"(median of {len(rs)}: {', '.join(f'{c:.2f}' for _, c in rs)})")
    a, b = med["migrated by the server"], med["copy of the template"]
    print(f"ratio: {a[1] / b[1]:.2f}x less server CPU, {a[0] / b[0]:.2f}x sooner")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
