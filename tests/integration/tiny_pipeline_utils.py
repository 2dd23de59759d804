"""Helpers for a tiny end-to-end pipeline: a random 2-layer BERT, a 120-entry dictionary, reverse-dictionary selection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

WORDS = ("the a of to is in and or for with on at by from that which who what as be are was cat dog animal small "
         "large big house home place where people live person water drink liquid clear river sea fish bird fly "
         "wing tree plant green leaf sun light day night dark car road drive vehicle wheel book read page word").split()


def write_tiny_dictionary(path: Path, n_entries: int = 120) -> Path:
    """Entries made from the tiny vocabulary, two or three definitions each (deterministic)."""
    words = [w for w in WORDS if len(w) > 2]
    lines = []
    for i in range(n_entries):
        entry = f"{words[i % len(words)]}{i}"
        for j in range(2 + i % 2):
            # the entry's number makes each text unique: no dev/test definition is also a training one
            defn = " ".join(words[(i * 7 + j * 3 + k * 5) % len(words)] for k in range(4 + (i + j) % 4)) + f" {i}"
            lines.append(json.dumps({"entry": entry, "definition": defn}))
    path.write_text("\n".join(lines) + "\n")
    return path


def tiny_config(tmp: Path, model_dir: Path, name: str = "tiny") -> Path:
    dictionary = write_tiny_dictionary(tmp / "tiny-dict.jsonl")
    cfg = {
        "name": name,
        "dictionary": {"name": "tiny", "sources": [{"kind": "jsonl", "paths": [str(dictionary)]}]},
        "harvest": None,
        "pst": {
            "base_model": str(model_dir), "dictionary": "tiny", "steps": 2, "seeds": [0],
            "grid": [{"pooling": "mean", "entry_encoding": "amp"}], "use_pooler": False, "lr": 1e-3,
            "lr_per_step": [1e-3, 5e-4],
            "batch_size": 8, "max_length": 32, "selection": "revdict-mrr", "selection_max_queries": 50,
            "data_dir": None, "device": "cpu", "checkpoint_every": 2,
        },
        "eval": {"tasks": ["revdict"], "data_dir": None, "baselines": ["untrained"], "revdict_max_queries": 50},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def raw_ci_config(tmp: Path, data: Path) -> Path:
    """configs/raw-ci.yaml with its data paths pointing at ``data`` (wherever the checkout is).

    The positive controls (DefSent+ and surrogate) write the same file, so in one data root they
    share the pretrained raw encoder (its artifact key is the pretrain section's content).
    """
    repo = Path(__file__).resolve().parents[2]
    cfg = yaml.safe_load((repo / "configs" / "raw-ci.yaml").read_text())
    cfg["dictionary"]["sources"][0]["paths"] = [str(data / "oewn" / "yaml")]
    for c in cfg["pretrain"]["corpora"]:
        c["paths"] = [str(data / "corpus" / c["name"])]
    cfg["pst"]["data_dir"] = cfg["eval"]["data_dir"] = str(data)
    path = tmp / "raw-ci.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # the controls' figures are one-thread figures

# The test process's Prefect API server (the session's prefect_test_harness), set by the
# integration conftest: CLI runs report to it instead of each starting a temporary server of its
# own (about 10 s of start-up apiece). Results and caches stay under each data root either way.
SHARED_API: str | None = None


def cli_env(home: Path, env: dict | None = None, *, own_server: bool = False) -> dict:
    """The environment of a ``defsentflow`` subprocess on data root ``home``: Prefect's home and
    results under the root, and the shared API server unless ``own_server`` (then the CLI starts
    its temporary one, as a user's run does)."""
    e = {**os.environ, "DEFSENTFLOW_HOME": str(home), "DEFSENTFLOW_QUIET": "1", **(env or {})}
    for k in ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH"):
        e.pop(k, None)
    if SHARED_API and not own_server:
        e["PREFECT_API_URL"] = SHARED_API
    return e


def run_cli(args: list[str], home: Path, *, timeout: float = 600, env: dict | None = None,
            own_server: bool = False) -> subprocess.CompletedProcess:
    e = cli_env(home, env, own_server=own_server)
    return subprocess.run([sys.executable, "-m", "defsentflow.cli", *args], env=e, capture_output=True, text=True,
                          timeout=timeout)


def cli_here(args: list[str], home: Path | None = None, *, one_thread: bool = False) -> subprocess.CompletedProcess:
    """``defsentflow ARGS`` on data root ``home`` (None: the one ``$DEFSENTFLOW_HOME`` names already) in
    this test process (its exit status, stdout and stderr), for tests whose subject is not the process
    boundary: the process has torch, transformers and Prefect loaded already, a subprocess loads them
    again (5-8 s of CPU apiece). Reports to the session's Prefect server like :func:`run_cli`; the
    environment and torch's thread count are restored afterwards. ``one_thread``: torch on one
    thread, as the controls' figures were measured. (Streams redirected by hand, not with capsys:
    Prefect's console handler keeps the stream it first saw, and capsys closes its stream after each test.)"""
    import contextlib
    import io

    from defsentflow.cli import main

    saved = dict(os.environ)
    os.environ["DEFSENTFLOW_QUIET"] = "1"
    if home is not None:
        os.environ["DEFSENTFLOW_HOME"] = str(home)
    if SHARED_API:
        os.environ["PREFECT_API_URL"] = SHARED_API
    threads = None
    if one_thread:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main([str(a) for a in args])
            except SystemExit as exc:  # argparse's own exits
                rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if threads is not None:
            torch.set_num_threads(threads)
    return subprocess.CompletedProcess(["defsentflow", *args], rc, out.getvalue(), err.getvalue())


def stage_statuses(stdout: str) -> dict[str, str]:
    """The closing ``stages:`` block of a run's output: stage -> ``cached`` or ``completed`` (a stage
    that ran more than once, as ``evaluate-model``: ``completed`` if any run computed)."""
    block = stdout[stdout.index("\nstages:"):].split("\n\n", 1)[0].splitlines()[2:]
    out: dict[str, str] = {}
    for line in block:
        status, stage = line.split()[:2]
        out[stage] = "completed" if "completed" in (status, out.get(stage)) else status
    return out


def catalog_rows(home: Path, sql: str, params: list | None = None) -> list[tuple]:
    """Rows of a read-only query against the catalog of data root ``home``."""
    import duckdb

    con = duckdb.connect(str(home / "catalog.duckdb"), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def final_metrics(home: Path) -> dict:
    """The selected model's metrics (filed under its own id, the run's pst-<run> naming it) after the
    last completed pipeline run."""
    import duckdb

    con = duckdb.connect(str(home / "catalog.duckdb"), read_only=True)
    try:
        run = con.execute("SELECT run_id FROM runs WHERE flow = 'pipeline' AND status = 'completed' "
                          "ORDER BY ended_at DESC LIMIT 1").fetchone()[0]
        winner = con.execute("SELECT winner_step, winner_model_id FROM pst_runs WHERE run_id = ?", [run]).fetchone()
        rows = con.execute("SELECT task, setting, metric, value FROM metrics WHERE model_id = ? ORDER BY ALL",
                           [winner[1] if winner else None]).fetchall()
    finally:
        con.close()
    return {"rows": rows, "winner_step": winner[0] if winner else None}


