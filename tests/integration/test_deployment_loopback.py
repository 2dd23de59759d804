"""The local server path on loopback: server, process worker, deploy, ``prefect deployment run``.

Everything listens on 127.0.0.1; telemetry is off. The demo deployment is run with the tiny
pipeline config as a parameter override so the test stays small.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from tiny_pipeline_utils import catalog_rows

pytestmark = [pytest.mark.slow, pytest.mark.first(4)]  # started early (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).parent / "prefect")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_health(url: str, timeout: float = 180, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"server at {url} did not come up:\n{log.read_text()[-3000:] if log else ''}")


def _prefect(args: list[str], env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    out = subprocess.run([PREFECT, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"prefect {' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def test_deployment_run_on_loopback(tiny_pipeline, tmp_path):
    home = tmp_path / "home"
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({"PREFECT_HOME": str(home / "prefect"), "DEFSENTFLOW_HOME": str(home), "DEFSENTFLOW_REPO": str(REPO),
                "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DEFSENTFLOW_QUIET": "1",
                "PREFECT_LOCAL_STORAGE_PATH": str(home / "prefect" / "results")})
    home.mkdir(parents=True)
    server_log = open(home / "server.log", "w")
    server = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port), "--analytics-off"],
                              env=env, cwd=REPO, stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True)
    worker = None
    try:
        _wait_health(api, log=home / "server.log")
        env["PREFECT_API_URL"] = api
        _prefect(["work-pool", "create", "cpu", "--type", "process"], env)
        _prefect(["work-pool", "create", "gpu", "--type", "process", "--base-job-template",
                  "deployments/work-pools/gpu-process.json"], env)
        _prefect(["--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml"], env)
        # The worker asks for scheduled runs every second instead of Prefect's default 10 s: each of
        # the two deployment runs below would otherwise wait up to 10 s, idle, to be picked up.
        worker = subprocess.Popen([PREFECT, "worker", "start", "--pool", "cpu"],
                                  env={**env, "PREFECT_WORKER_QUERY_SECONDS": "1"}, cwd=REPO,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        out = _prefect(["deployment", "run", "pipeline/demo", "--param", f"config_path={tiny_pipeline}", "--watch"],
                       env, timeout=900)
        assert "Completed" in out.stdout, out.stdout[-2000:]
        runs = catalog_rows(home, "SELECT run_id, status FROM runs WHERE flow = 'pipeline'")
        assert [r[1] for r in runs] == ["completed"], runs
        metrics = catalog_rows(home, "SELECT count(*) FROM metrics WHERE run_id = ?", [runs[0][0]])
        assert metrics[0][0] > 0
        assert catalog_rows(home, "SELECT count(*) FROM leaderboard")[0][0] >= 1

        # What the nightly schedule does: same inputs -> the run is recorded as unchanged.
        t0 = time.monotonic()
        _prefect(["deployment", "run", "pipeline/demo", "--param", f"config_path={tiny_pipeline}",
                  "--param", "only_if_changed=true", "--watch"], env, timeout=300)
        statuses = catalog_rows(home, "SELECT status FROM runs WHERE flow = 'pipeline' ORDER BY started_at")
        assert [s[0] for s in statuses] == ["completed", "unchanged"], statuses
        print(f"unchanged deployment run: {time.monotonic() - t0:.1f}s end to end")
    finally:
        for p in (worker, server):  # workers stop before the server
            if p is not None:
                os.killpg(p.pid, signal.SIGTERM)  # the whole group: the server's uvicorn child too
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
