"""Fixtures for the end-to-end tests."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import tiny_pipeline_utils
from filelock import FileLock
from tiny_pipeline_utils import cli_here, final_metrics, raw_ci_config, run_cli, tiny_config


@pytest.fixture(scope="session", autouse=True)
def _cli_prefect_api(prefect_test_harness):
    """The CLI runs of these tests report to the session's Prefect server (one per test process)."""
    from prefect.settings import PREFECT_API_URL

    tiny_pipeline_utils.SHARED_API = PREFECT_API_URL.value()
    yield
    tiny_pipeline_utils.SHARED_API = None


@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory, tiny_bert_dir) -> Path:
    tmp = tmp_path_factory.mktemp("tiny-pipeline")
    return tiny_config(tmp, tiny_bert_dir)


@dataclass(frozen=True)
class RawEncoder:
    """The raw-ci encoder (``configs/raw-ci.yaml``'s pretraining) in its data root."""

    home: Path        # the data root it was pretrained in (the DefSent+ control runs there)
    config: Path      # configs/raw-ci.yaml with this checkout's data paths
    model_id: str
    model_dir: Path
    seconds: float    # the ingest and the pretraining, in the test process that ran them


def _once_per_session(session_dir: Path, name: str, build: Callable[[Path], dict]) -> dict:
    """``build(directory)`` once per test session, by whichever test process asks first (a file lock
    in the session's directory, which pytest-xdist's processes share); its JSON result for all."""
    base = session_dir / name
    base.mkdir(exist_ok=True)
    done = base / "result.json"
    with FileLock(str(base / "lock")):
        if not done.exists():
            done.write_text(json.dumps(build(base)))
    return json.loads(done.read_text())


@pytest.fixture(scope="session")
def raw_ci_encoder(session_dir, shared_data) -> RawEncoder:
    """The raw encoder of both positive controls, pretrained once per test session (ingest of OEWN
    and pretraining, through the CLI in that process, one thread) by the first test process that asks for it."""
    for needed in ("oewn/yaml", "corpus/bbc", "corpus/gutenberg"):
        if not (shared_data / needed).exists():
            pytest.skip(f"{shared_data / needed} is missing")

    def pretrain(base: Path) -> dict:
        home, config = base / "home", raw_ci_config(base, shared_data)
        t0 = time.monotonic()
        for args in (["ingest", "dictionary", "--source", "oewn", str(shared_data / "oewn" / "yaml"), "--name", "oewn"],
                     ["pretrain", str(config)]):
            res = cli_here(args, home, one_thread=True)
            assert res.returncode == 0, res.stderr[-4000:]
        # "<model id> (300 steps, loss 10.0 -> 7.8) -> <directory>"
        model_id, model_dir = next((line.split()[0], line.rsplit(" -> ", 1)[1])
                                   for line in res.stdout.splitlines() if ") -> " in line)
        return {"home": str(home), "config": str(config), "model_id": model_id, "model_dir": model_dir,
                "seconds": time.monotonic() - t0}

    info = _once_per_session(session_dir, "raw-ci-encoder", pretrain)
    return RawEncoder(Path(info["home"]), Path(info["config"]), info["model_id"], Path(info["model_dir"]),
                      info["seconds"])


@pytest.fixture(scope="session")
def tiny_first_run(session_dir, tiny_bert_dir) -> tuple[Path, Path, float, dict]:
    """One finished ``defsentflow run`` of the tiny pipeline, once per test session: the kill test's
    uninterrupted reference, then the root the rerun test runs a second time. (config, data root,
    seconds, the run's final metrics, read here so that the kill test never opens a catalog the
    rerun test may be writing)."""
    def first_run(base: Path) -> dict:
        config, home = tiny_config(base, tiny_bert_dir), base / "home"
        t0 = time.monotonic()
        res = run_cli(["run", str(config)], home)  # a subprocess: its time spreads the kill test's kills over a whole run
        assert res.returncode == 0, res.stderr[-3000:]
        seconds = time.monotonic() - t0
        shutil.copytree(home, base / "pristine", symlinks=True)  # before any test runs in `home` again
        return {"config": str(config), "home": str(home), "seconds": seconds, "metrics": final_metrics(home)}

    info = _once_per_session(session_dir, "tiny-first-run", first_run)
    metrics = {"rows": [tuple(r) for r in info["metrics"]["rows"]], "winner_step": info["metrics"]["winner_step"]}
    return Path(info["config"]), Path(info["home"]), info["seconds"], metrics


@pytest.fixture()
def tiny_finished_root(tiny_first_run, tmp_path) -> tuple[Path, Path, dict]:
    """This test's own copy of the shared first run's data root, as the run left it (the copy was
    taken before any other test ran there): (config, data root, the run's final metrics)."""
    config, home, _, metrics = tiny_first_run
    root = tmp_path / "home"
    shutil.copytree(home.parent / "pristine", root, symlinks=True)
    return config, root, metrics
