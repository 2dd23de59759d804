"""``defsentflow run`` on a Dask cluster of another host (workers in a network namespace joined by a
veth pair, tests/netns.py), as a user runs it: ``--dask-address`` and no ``PREFECT_API_URL``.

Two commands on the same long-lived workers. The first is stopped by SIGTERM while a candidate
trains on the other host: it exits in one line, its queued tasks are dropped and the running
candidate stops at its next checkpoint, leaving it. The second resumes from that checkpoint, loses
a worker mid-candidate (SIGKILL, as an out-of-memory kill would) and finishes with the figures and
the selected weights of the session's sequential run. Each command's task runs reach its own
temporary Prefect API, which it serves on the address the workers route to; the second's fresh
Prefect home starts from the migrated database a first server left in the cache (tasks/server.py)."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_pipeline_utils import cli_env, final_metrics

from defsentflow.fanout import HOLD_AFTER_STEPS_ENV, KILL_AFTER_STEPS_ENV, KILL_MARKER_ENV

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("netns")]  # one process: one netns cluster (session)


def _weights(home: Path) -> str:
    """The hash of the selected model's weights in the last completed run of data root ``home``."""
    from defsentflow.storage import Catalog

    cat = Catalog(home, reader=True)
    run = cat.query("SELECT run_id FROM runs WHERE flow = 'pipeline' AND status = 'completed' "
                    "ORDER BY ended_at DESC LIMIT 1")[0]["run_id"]
    path = cat.query("SELECT m.path FROM pst_runs AS p JOIN models AS m ON m.model_id = p.winner_model_id "
                     "WHERE p.run_id = ?", [run])[0]["path"]
    h = hashlib.blake2b()
    for f in sorted(Path(path).glob("*.safetensors")):
        h.update(f.read_bytes())
    return h.hexdigest()


def _rows(db: Path, sql: str) -> list[tuple]:
    """The rows of ``sql`` in the SQLite database ``db`` (a Prefect database)."""
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _task_runs(prefect_home: Path) -> list[tuple[str, str]]:
    """(name, state) of the task runs in a command's Prefect database."""
    return _rows(prefect_home / "prefect.db", "SELECT name, state_type FROM task_run ORDER BY name")


def _block_types(db: Path) -> set[str]:
    """The ids of the block types in a Prefect database: random per database a server migrates."""
    return {row[0] for row in _rows(db, "SELECT id FROM block_type")}


def _cli(config: Path, home: Path, address: str, prefect_home: Path) -> subprocess.Popen:
    env = {**cli_env(home, own_server=True), "PREFECT_HOME": str(prefect_home)}  # its own temporary API
    return subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "run", str(config), "--dask-address", address],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _on_workers(client, env: dict[str, str | None]) -> None:
    def apply(env=env):
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    client.run(apply)


def test_two_commands_on_the_other_hosts_workers(netns_dask, tiny_first_run, tmp_path):
    from distributed import Client

    from defsentflow.training.checkpoint import load_checkpoint

    config, seq_home, _, seq_metrics = tiny_first_run
    home = tmp_path / "home"
    held, killed = tmp_path / "held", tmp_path / "killed"
    with Client(netns_dask.address) as client:
        # 1. SIGTERM while a candidate trains on the other host: it stops at its next checkpoint.
        _on_workers(client, {HOLD_AFTER_STEPS_ENV: "2", KILL_MARKER_ENV: str(held)})
        first = _cli(config, home, netns_dask.address, tmp_path / "prefect-1")
        deadline = time.monotonic() + 300
        while not held.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert held.exists(), first.communicate()[1][-3000:]
        first.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        _, err = first.communicate(timeout=120)
        assert first.returncode == 130, err[-3000:]
        assert err.strip().splitlines()[-1].startswith("defsentflow: interrupted"), err[-3000:]
        while any(client.processing().values()) and time.monotonic() - t0 < 30:
            time.sleep(0.2)
        assert not any(client.processing().values()), "a cancelled command's candidate kept training"
        [ckpt] = list((home / "checkpoints" / "pst").iterdir())
        assert load_checkpoint(ckpt, map_location="cpu")["step"] == 2  # where the held candidate stopped
        assert ("pst-candidate", "FAILED") in {(n.rsplit("-", 1)[0], s) for n, s in _task_runs(tmp_path / "prefect-1")}

        # 2. The same command again: resumes, loses a worker mid-candidate, ends as the sequential run.
        _on_workers(client, {HOLD_AFTER_STEPS_ENV: None, KILL_AFTER_STEPS_ENV: "3", KILL_MARKER_ENV: str(killed)})
        try:
            second = _cli(config, home, netns_dask.address, tmp_path / "prefect-2")
            out, err = second.communicate(timeout=600)
        finally:
            client.wait_for_workers(2, timeout=120)  # the killed worker's nanny restarted it
            _on_workers(client, {KILL_AFTER_STEPS_ENV: None, KILL_MARKER_ENV: None})
        assert second.returncode == 0, err[-3000:]
        assert killed.exists()  # a worker on the other host died after a training step; Dask rescheduled its task
        assert not list((home / "checkpoints" / "pst").iterdir())  # the stopped candidate finished from its checkpoint
    metrics = final_metrics(home)
    assert [tuple(r) for r in metrics["rows"]] == seq_metrics["rows"] and metrics["winner_step"] == seq_metrics["winner_step"]
    assert _weights(home) == _weights(seq_home.parent / "pristine")
    runs = _task_runs(tmp_path / "prefect-2")
    candidates = [s for n, s in runs if n.startswith("pst-candidate-")]
    assert len(candidates) >= 3 and set(candidates) == {"COMPLETED"}, runs  # every one reached its command's API
    # The second command's fresh Prefect home started from the migrated template the first server of
    # the session left (the template's block types, not newly made ones), which holds no run.
    from defsentflow.tasks.server import database_template

    template = database_template()
    assert _block_types(tmp_path / "prefect-2" / "prefect.db") == _block_types(template) != set()
    assert _rows(template, "SELECT count(*) FROM flow_run") == [(0,)]
