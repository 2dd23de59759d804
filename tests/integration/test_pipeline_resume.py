"""The pipeline killed with SIGKILL at random points, then re-run, ends with the metrics of an
uninterrupted run; no temporary Prefect server outlives its killed owner."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_pipeline_utils import catalog_rows, cli_env, cli_here, final_metrics, run_cli, stage_statuses

from defsentflow.tasks.server import SERVER_MARKER
from tests.golden import expect_figure

pytestmark = [pytest.mark.slow, pytest.mark.first(2), pytest.mark.xdist_group("tiny-run")]  # one process: the shared first run, then both tests


def _our_servers(owner_pids: set[int]) -> list[int]:
    """Live processes carrying the local-server marker of one of ``owner_pids``."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            stat = (d / "stat").read_text().split()
        except OSError:
            continue
        if stat[2] == "Z":
            continue
        for item in env:
            if item.startswith(SERVER_MARKER.encode() + b"=") and int(item.split(b"=", 1)[1]) in owner_pids:
                found.append(int(d.name))
    return found


def test_kill_and_resume_matches_uninterrupted_run(tiny_first_run, tmp_path):
    tiny_pipeline, _, full, expected = tiny_first_run  # the uninterrupted reference run
    assert expected["rows"], "the reference run recorded no metrics"

    home = tmp_path / "killed"
    rng = random.Random(1234)
    killed, owners, served = 0, set(), 0
    for attempt in range(12):
        if killed >= 5:
            break
        # The first two runs start their own temporary Prefect server (a user's run) and are killed
        # once it is up: it must die with them. The rest report to the session's server, so their
        # kills land in the pipeline's work rather than in a server's start-up.
        own = attempt < 2
        proc = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "run", str(tiny_pipeline)],
                                env=cli_env(home, own_server=own), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        owners.add(proc.pid)
        if own:
            deadline = time.monotonic() + 120
            while not (up := _our_servers({proc.pid})) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            served += bool(up)
            delay = rng.uniform(0.5, 5.0)
        else:
            delay = rng.uniform(3.0, max(6.0, full * 0.9))
        try:
            proc.wait(timeout=delay)
            continue  # finished before the kill: the next attempt kills a later point, or finds it all cached
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed += 1
    assert killed >= 5, f"only {killed} kills landed"
    assert served, "no killed run had started its temporary Prefect server"
    deadline = time.monotonic() + 10
    while _our_servers(owners) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _our_servers(owners) == [], "a killed run left its temporary Prefect server running"

    final = run_cli(["run", str(tiny_pipeline)], home)
    assert final.returncode == 0, final.stderr[-3000:]
    got = final_metrics(home)
    # the uninterrupted run's figures are golden (tests/golden/figures.yaml); the resumed run equals them
    fig = {(r[0], r[1], r[2]): r[3] for r in expected["rows"]}
    print("\ntiny pipeline figures:", fig, "winner step", expected["winner_step"])
    expect_figure("tiny_pipeline.winner_step", expected["winner_step"])
    expect_figure("tiny_pipeline.revdict_head_mrr", fig[("revdict+q50", "head", "mrr")])
    expect_figure("tiny_pipeline.revdict_cosine_mrr", fig[("revdict+q50", "cosine", "mrr")])
    assert got["winner_step"] == expected["winner_step"]
    assert [r[:3] for r in got["rows"]] == [r[:3] for r in expected["rows"]]
    for a, b in zip(got["rows"], expected["rows"]):
        assert a[3] == pytest.approx(b[3], abs=1e-9), (a, b)


def test_rerun_is_cached_and_unchanged_inputs_end_at_once(tiny_first_run, tmp_path):
    tiny_pipeline, home, _, _ = tiny_first_run  # the shared first run's root: this run is its second
    artifacts = "SELECT artifact_key, kind FROM artifacts WHERE kind NOT IN ('report') ORDER BY 1"
    before = catalog_rows(home, artifacts)
    chosen = "SELECT run_id, winner_model_id, model_id FROM pst_runs ORDER BY created_at"
    board = "SELECT model_id FROM leaderboard WHERE model_id NOT LIKE 'base:%'"
    first_board = catalog_rows(home, board)
    again = run_cli(["run", str(tiny_pipeline)], home)
    assert again.returncode == 0, again.stderr[-3000:]
    # stable ids: the same model keeps its id on the leaderboard; the first run's name still names it
    (_, first, first_name), (_, second, _) = catalog_rows(home, chosen)
    assert first == second and catalog_rows(home, board) == first_board and (first,) in first_board
    assert f"selected: {first} " in again.stdout
    from defsentflow.model.lookup import find_model

    assert find_model(first_name, root=home).model_id == first
    # every stage found by its content key (step 0 too: the untrained encoder's scores), and the run says so
    stages = stage_statuses(again.stdout)
    assert stages == {"ingest-dictionary": "cached", "pst-step-0": "cached", "pst-step-1": "cached",
                      "pst-step-2": "cached", "evaluate-model": "cached"}, again.stdout
    assert "(completed, reused: every stage found done" in again.stdout
    # Nothing new was computed: the same artifacts, and every trained PST step reused as a whole.
    assert catalog_rows(home, artifacts) == before
    run_id = catalog_rows(home, "SELECT run_id FROM runs WHERE flow = 'pipeline' ORDER BY started_at DESC LIMIT 1")[0][0]
    steps = catalog_rows(home, "SELECT stage, status FROM stages WHERE run_id = ? AND stage LIKE 'pst-step-%' "
                               "ORDER BY stage", [run_id])
    assert steps and all(status == "cached" for _, status in steps), steps
    lines = [line for line in (home / "logs" / f"{run_id}.log").read_text().splitlines() if line.strip()]
    assert len(lines) == len(set(lines)), "a line of the CLI run's log twice"
    sched = cli_here(["run", str(tiny_pipeline), "--only-if-changed"], home)  # in this process: the subject is its outcome
    assert sched.returncode == 0, sched.stderr[-3000:]
    assert "(unchanged)" in sched.stdout
