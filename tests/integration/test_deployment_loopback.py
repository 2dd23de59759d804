"""The Prefect server path on loopback, as the README sets it up: a real server (its scheduler
service included), process workers, ``prefect deploy --all``, ``prefect deployment run``.

One server for everything here: deployment runs equal CLI runs (a deployment run after a CLI run
of the same config recomputes nothing, and the other way round; each writes ``logs/RUN_ID.log``),
and schedules fire (``retrain-nightly`` shows upcoming runs; a deployment with a short interval
gets scheduled runs from the server's scheduler, and the worker runs one to completion). Each run's
log holds every line once; a run that did no work ends in a Completed state named for it (Reused,
Unchanged) and carries the tag. The promotion gate, across the same boundary: while ``defsentflow
serve`` runs, a deployment run of a variant that is worse on dev keeps ``tiny-dep@champion`` (serve
answers from the old model), one that is better promotes it (serve answers from the new model, no
restart), and ``defsentflow rollback`` brings the old one back. The
environment is the README's: in particular no ``PREFECT_LOCAL_STORAGE_PATH``, which once made a
deployment run look for Prefect's cached results elsewhere than the CLI had put them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from tiny_pipeline_utils import catalog_rows, cli_here

pytestmark = [pytest.mark.slow, pytest.mark.first(3)]  # started early (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).parent / "prefect")
REUSABLE = "SELECT artifact_key, kind FROM artifacts WHERE kind <> 'report' ORDER BY 1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(api: str, path: str, body: dict | None = None):
    req = urllib.request.Request(f"{api}{path}", data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


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
    out = subprocess.run([PREFECT, *args], env=env, cwd=env["CWD"], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"prefect {' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _runs(api: str, deployment: str, state: str | None = None) -> list[dict]:
    flow, name = deployment.split("/")
    dep = _api(api, f"/deployments/name/{flow}/{name}")
    body: dict = {"deployments": {"id": {"any_": [dep["id"]]}}, "limit": 50}
    if state:
        body["flow_runs"] = {"state": {"type": {"any_": [state]}}}
    return _api(api, "/flow_runs/filter", body)


def _last_pipeline_run(home: Path) -> tuple[str, str]:
    return catalog_rows(home, "SELECT run_id, status FROM runs WHERE flow = 'pipeline' ORDER BY started_at DESC LIMIT 1")[0]


def _stages(home: Path, run_id: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for stage, status in catalog_rows(home, "SELECT stage, status FROM stages WHERE run_id = ?", [run_id]):
        out.setdefault(stage, set()).add(status)
    return out


def _recomputed_nothing(home: Path, run_id: str) -> None:
    stages = _stages(home, run_id)
    assert stages and all(s == {"cached"} for s in stages.values()), stages


def _each_line_once(log: Path) -> str:
    """The run's log, every line of it once (a deployment run's Prefect lines were written twice)."""
    text = log.read_text()
    twice = {line: n for line, n in Counter(line for line in text.splitlines() if line.strip()).items() if n > 1}
    assert not twice, f"{len(twice)} lines more than once in {log.name}: {list(twice)[:5]}"
    return text


def _serve(home: Path, env: dict, log: Path) -> tuple[subprocess.Popen, str]:
    """``defsentflow serve --port 0`` on ``home``: the process and its URL (from the line it prints)."""
    proc = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "serve", "--port", "0", "--threads", "1"],
                            env={**env, "DEFSENTFLOW_HOME": str(home)}, cwd=env["CWD"], stdout=subprocess.PIPE,
                            stderr=open(log, "w"), text=True, start_new_session=True)
    for line in proc.stdout:  # "serving <root> on http://127.0.0.1:PORT/ (Ctrl-C stops)"
        if " on http://" in line:
            return proc, line.split(" on ", 1)[1].split()[0].rstrip("/")
    raise AssertionError(f"serve did not start:\n{log.read_text()[-3000:]}")


def _served_model(url: str, alias: str) -> str:
    """The model ``serve`` answers a reverse-dictionary query for ``alias`` from."""
    query = urllib.parse.urlencode({"q": "a small animal", "model": alias, "k": 3})
    with urllib.request.urlopen(f"{url}/api/revdict?{query}", timeout=60) as r:
        return json.loads(r.read())["model"]


def _champion(home: Path, alias: str) -> str:
    return catalog_rows(home, "SELECT model_id FROM alias_holders WHERE alias = ?", [alias])[0][0]


def test_deployment_runs_equal_cli_runs_and_schedules_fire(tiny_finished_root, migrated_prefect_db, tmp_path,
                                                           monkeypatch):
    tiny, home, _ = tiny_finished_root  # a data root a `defsentflow run` of the tiny config finished
    # the run set tiny@champion: best-model and every command that takes a model name it alike
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(home))
    (tmp_path / "s.txt").write_text("a small animal\n")
    best = _cli("best-model", str(tiny)).strip()
    _cli("encode", "tiny@champion", "--input", str(tmp_path / "s.txt"), "--out", str(tmp_path / "v.parquet"))
    assert best and pq.read_schema(tmp_path / "v.parquet").metadata[b"model"].decode() == best
    assert catalog_rows(home, "SELECT path FROM models WHERE model_id = ?", [_champion(home, "tiny@champion")])[0][0] \
        in best
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    elsewhere = tmp_path / "elsewhere"  # users' shells and workers are not in the checkout
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DEFSENTFLOW_"))}
    env.update({"PREFECT_HOME": str(tmp_path / "prefect"), "DEFSENTFLOW_HOME": str(home), "DO_NOT_TRACK": "1",
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DEFSENTFLOW_QUIET": "1", "CWD": str(elsewhere)})
    # The server starts on a copy of the session's migrated Prefect database where there is one (the
    # harness's, tests/conftest.py: this Prefect version, its schema at the head, no run in it), as a
    # command's fresh PREFECT_HOME starts from its template (tasks/server.py): ~6 s of CPU not spent migrating.
    (tmp_path / "prefect").mkdir()
    if migrated_prefect_db is not None:
        shutil.copyfile(migrated_prefect_db, tmp_path / "prefect" / "prefect.db")
    server_log = open(tmp_path / "server.log", "w")
    # The scheduler service looks for deployments to schedule every 2 s instead of every 60 s.
    server = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port), "--analytics-off"],
                              env={**env, "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "2"}, cwd=elsewhere,
                              stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True)
    worker = served = None
    try:
        _wait_health(api, log=tmp_path / "server.log")
        env["PREFECT_API_URL"] = api
        _prefect(["work-pool", "create", "cpu", "--type", "process"], env)
        _prefect(["work-pool", "create", "gpu", "--type", "process", "--base-job-template",
                  str(REPO / "deployments" / "work-pools" / "gpu-process.json")], env)
        _prefect(["--no-prompt", "deploy", "--all", "--prefect-file", str(REPO / "deployments" / "prefect.yaml")], env)
        # The worker asks for runs every second instead of Prefect's default 10 s.
        worker = subprocess.Popen([PREFECT, "worker", "start", "--pool", "cpu"],
                                  env={**env, "PREFECT_WORKER_QUERY_SECONDS": "1"}, cwd=elsewhere,
                                  stdout=open(tmp_path / "worker.log", "w"), stderr=subprocess.STDOUT,
                                  start_new_session=True)

        # 1. After a CLI run of the config, a deployment run recomputes nothing and writes its log.
        before = catalog_rows(home, REUSABLE)
        t0 = time.monotonic()
        out = _prefect(["deployment", "run", "pipeline/demo", "--param", f"config_path={tiny}", "--watch"], env, 600)
        assert "Completed" in out.stdout, out.stdout[-2000:]
        run_id, status = _last_pipeline_run(home)
        assert status == "completed"
        _recomputed_nothing(home, run_id)
        assert catalog_rows(home, REUSABLE) == before
        log = _each_line_once(home / "logs" / f"{run_id}.log")
        assert "stages:" in log and "evaluate-model" in log and "figures:" in log, log[-3000:]
        assert "PST step 1" in log and "; loss " in log  # each step's figure, each candidate's losses
        # the report artifact the UI shows carries its images (the UI cannot read the report's folder)
        key = "report-" + "".join(c if c.isalnum() else "-" for c in run_id.lower())
        arts = _api(api, "/artifacts/filter", {"artifacts": {"key": {"any_": [key]}}})
        assert arts and "](data:image/png;base64," in arts[0]["data"] and "](img/" not in arts[0]["data"]
        # ... and says so where the UI filters: a Completed state named Reused, tagged reused
        (flow_run,) = _runs(api, "pipeline/demo")
        assert flow_run["state"]["type"] == "COMPLETED" and flow_run["state"]["name"] == "Reused", flow_run["state"]
        assert {"reused", "kept"} <= set(flow_run["tags"]), flow_run["tags"]  # the same model: the champion stays
        print(f"deployment run after the CLI run: {time.monotonic() - t0:.1f}s end to end, nothing recomputed")

        # 2. The other way round: what the deployment computes first (the evaluations of other settings;
        # training is shared and found), the CLI then finds.
        # PST's last step as the final model (tiny-dep's first run: it sets tiny-dep@champion).
        cfg = yaml.safe_load(tiny.read_text())
        cfg["name"], cfg["eval"]["revdict_max_queries"], cfg["pst"]["final"] = "tiny-dep", 30, "last"
        cfg["report"] = False  # step 1 checked the report; the runs below need none
        other = _variant(tmp_path, "tiny-dep", cfg)
        _prefect(["deployment", "run", "pipeline/demo", "--param", f"config_path={other}", "--watch"], env, 600)
        dep_run, status = _last_pipeline_run(home)
        assert status == "completed" and _stages(home, dep_run)["evaluate-model"] == {"completed"}  # it evaluated
        assert sorted(r["state"]["name"] for r in _runs(api, "pipeline/demo")) == ["Promoted", "Reused"]  # it worked
        first = _champion(home, "tiny-dep@champion")
        before = catalog_rows(home, REUSABLE)
        again = cli_here(["run", str(other)], home)  # the CLI's run, in this process (the boundary here is the deployment's)
        assert again.returncode == 0, again.stderr[-3000:]
        cli_run, status = _last_pipeline_run(home)
        assert status == "completed" and cli_run != dep_run
        _recomputed_nothing(home, cli_run)
        assert catalog_rows(home, REUSABLE) == before

        # 3. The promotion gate while serve runs: a variant worse on dev keeps the champion, a better one
        # replaces it (serve answers from it at the next request), a rollback brings the old one back.
        t0 = time.monotonic()
        served, url = _serve(home, env, tmp_path / "serve.log")
        assert _served_model(url, "tiny-dep@champion") == first
        worse = {**cfg, "pst": {**{k: v for k, v in cfg["pst"].items() if k != "lr_per_step"}, "lr": 1e-7}}
        _prefect(["deployment", "run", "pipeline/demo", "--param", f"config_path={_variant(tmp_path, 'worse', worse)}",
                  "--watch"], env, 600)
        (kept_run, promotion), = catalog_rows(home, "SELECT run_id, promotion FROM runs ORDER BY started_at DESC LIMIT 1")
        assert promotion == "kept" and _champion(home, "tiny-dep@champion") == first
        assert _served_model(url, "tiny-dep@champion") == first
        better = {**cfg, "pst": {k: v for k, v in cfg["pst"].items() if k != "final"}}  # PST's best step
        _prefect(["deployment", "run", "pipeline/demo", "--param", f"config_path={_variant(tmp_path, 'better', better)}",
                  "--watch"], env, 600)
        promoted = _champion(home, "tiny-dep@champion")
        assert promoted != first and _served_model(url, "tiny-dep@champion") == promoted  # no restart
        states = Counter(r["state"]["name"] for r in _runs(api, "pipeline/demo"))
        assert states == {"Promoted": 2, "Kept": 1, "Reused": 1}, states
        kept = next(r for r in _runs(api, "pipeline/demo") if r["state"]["name"] == "Kept")
        assert "kept" in kept["tags"] and "is below its" in kept["state"]["message"], kept["state"]
        (art,) = _api(api, "/artifacts/filter", {"artifacts": {"key": {"any_": ["promotion-tiny-dep-champion"]}},
                                                 "sort": "CREATED_DESC", "limit": 1})
        assert f"`{promoted}`" in art["data"] and f"`{first}`" in art["data"] and "promoted" in art["data"]
        assert "kept" in (home / "logs" / f"{kept_run}.log").read_text()  # the run summary's line
        assert f"{promoted} -> {first}" in _cli("rollback", "tiny-dep@champion", "--yes")  # to the worse model: --yes; in this process
        assert _served_model(url, "tiny-dep@champion") == first
        _stop(served)
        served = None
        print(f"the gate across the boundary (serve, a worse and a better deployment run, rollback): "
              f"{time.monotonic() - t0:.1f}s")

        # 4. Schedules fire: retrain-nightly has upcoming runs; a 2-second schedule gets runs from the
        # server's scheduler and the worker runs one (inputs unchanged: it ends 'unchanged').
        deadline = time.monotonic() + 60
        while not _runs(api, "pipeline/retrain-nightly", "SCHEDULED") and time.monotonic() < deadline:
            time.sleep(1)
        upcoming = _runs(api, "pipeline/retrain-nightly", "SCHEDULED")
        assert upcoming and all(r["auto_scheduled"] for r in upcoming), (tmp_path / "server.log").read_text()[-3000:]
        _prefect(["--no-prompt", "deploy", "defsentflow.flows.pipeline.pipeline", "--name", "every-2s", "--pool", "cpu",
                  "--interval", "2", "--concurrency-limit", "1", "--param", f"config_path={tiny}", "--param", "only_if_changed=true"], env)
        deadline = time.monotonic() + 240
        # a quick look (one API read): the worker is stopped as soon as one run completed, before it
        # starts the next scheduled one (each a whole process: imports, a run, ~8 s of CPU)
        while not (done := _runs(api, "pipeline/every-2s", "COMPLETED")) and time.monotonic() < deadline:
            time.sleep(0.25)
        _stop(worker)  # no further scheduled run holds the catalog while it is read
        worker = None
        assert done, f"no scheduled run completed:\n{(tmp_path / 'worker.log').read_text()[-3000:]}"
        assert done[0]["auto_scheduled"], done[0]  # created by the scheduler, not by hand
        assert done[0]["state"]["name"] == "Unchanged" and "unchanged" in done[0]["tags"], (done[0]["state"], done[0]["tags"])
        unchanged = _api(api, "/flow_runs/filter", {"flow_runs": {"tags": {"all_": ["unchanged"]}}})
        assert done[0]["id"] in {r["id"] for r in unchanged}  # the UI's tag filter finds it
        statuses = [s for (s,) in catalog_rows(home, "SELECT status FROM runs WHERE flow = 'pipeline' "
                                                     "AND json_extract_string(config, '$.name') = 'tiny'")]
        assert "unchanged" in statuses, statuses
        for (scheduled,) in catalog_rows(home, "SELECT run_id FROM runs WHERE flow = 'pipeline' AND status = 'unchanged'"):
            assert "nothing to retrain" in _each_line_once(home / "logs" / f"{scheduled}.log")
    finally:
        for p in (served, worker, server):  # workers stop before the server
            if p is not None:
                _stop(p)


def _variant(tmp: Path, name: str, cfg: dict) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _cli(*args: str) -> str:
    """``defsentflow ARGS`` in this process, on the data root of the environment (its stdout; a failure fails the test)."""
    res = cli_here(list(args))
    assert res.returncode == 0, (args, res.stderr[-3000:])
    return res.stdout


def _stop(p: subprocess.Popen) -> None:
    os.killpg(p.pid, signal.SIGTERM)  # the whole group: a worker's flow runs, the server's uvicorn child
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
