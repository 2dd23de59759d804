"""The ``compute:`` section and what a worker must offer: one-line refusals, the route to the workers."""

from __future__ import annotations

import pytest

from defsentflow import __version__
from defsentflow.compute import (
    ComputeSection,
    attach_problems,
    compute_from_env,
    compute_to_env,
    flow_process_problem,
    route_address,
    shared_paths,
    worker_report,
)
from defsentflow.storage.hashing import code_version

GOOD = {"guard": "1", "version": __version__, "code": code_version(), "missing": [], "api": "ok", "cuda": 0}


def _problems(workers, reports, **compute):
    return attach_problems(workers, reports, compute=ComputeSection(**compute), version=__version__,
                           code=code_version(), paths={"data root": "/r", "base model": "/m"})


def test_a_ready_cluster_has_no_problems_and_each_lack_is_one_line_naming_the_fix():
    workers = {"tcp://a:1": {"nthreads": 1}, "tcp://b:1": {"nthreads": 1}}
    assert _problems(workers, {"tcp://a:1": GOOD, "tcp://b:1": GOOD}) == []
    bad = {"tcp://a:1": {**GOOD, "guard": ""},
           "tcp://b:1": {**GOOD, "code": "0.1.0+other", "missing": ["base model", "data root (writable)"],
                         "api": "Connection refused"}}
    found = _problems({**workers, "tcp://b:1": {"nthreads": 4}}, bad)
    assert all("\n" not in p for p in found)
    want = ["1 of 2 workers lack the catalog guard: tcp://a:1; start them with DEFSENTFLOW_WORKER=1",
            "1 of 2 workers run several threads: tcp://b:1 (nthreads=4); start them with --nthreads 1",
            "1 of 2 workers run other code: tcp://b:1 (", "1 of 2 workers do not see the base model /m: tcp://b:1",
            "1 of 2 workers cannot write the data root /r: tcp://b:1", "1 of 2 workers do not reach the Prefect API: "
            "tcp://b:1 (Connection refused); set PREFECT_API_URL"]
    assert len(found) == len(want) and all(p.startswith(w) for p, w in zip(found, want)), found
    gpu = {"tcp://a:1": {"nthreads": 1, "resources": {"GPU": 1}}}
    assert _problems(gpu, {"tcp://a:1": GOOD}, gpus_per_candidate=1)[0].startswith(
        "1 of 1 workers offer GPU resources without a CUDA device: tcp://a:1")


def test_this_hosts_worker_report(tmp_path):
    report = worker_report({"data root": str(tmp_path), "data_dir": str(tmp_path / "absent")})
    assert report["missing"] == ["data_dir"] and report["code"] == code_version() and report["api"] is None


def test_the_flow_process_must_not_carry_the_workers_guard():
    assert flow_process_problem({}) is None and flow_process_problem({"DEFSENTFLOW_WORKER": "0"}) is None
    assert flow_process_problem({"DEFSENTFLOW_WORKER": "1"}).startswith(
        "DEFSENTFLOW_WORKER=1 is set in this process's environment, where the flow runs")


def test_the_route_to_the_workers():
    assert route_address(["127.0.0.1"]) == "127.0.0.1"
    assert route_address([]) == "127.0.0.1"


def test_every_path_gets_the_same_threads_through_the_environment():
    compute = ComputeSection(threads_per_candidate=3, worker_timeout=5)
    assert ComputeSection().threads_per_candidate == 1  # the workers' count: the same weights everywhere
    assert compute_from_env(compute_to_env(compute)) == compute  # sequential too, not only with a cluster
    with pytest.raises(ValueError):
        ComputeSection(threads_per_candidate=0)


def test_shared_paths_name_what_the_workers_must_see(tiny_bert_dir, tmp_path):
    from defsentflow.config import config_from_dict

    cfg = config_from_dict({"name": "x", "dictionary": {"name": "d", "sources": [{"kind": "jsonl", "paths": ["a"]}]},
                            "pst": {"base_model": str(tiny_bert_dir), "dictionary": "d", "data_dir": str(tmp_path)}})
    assert shared_paths(cfg, tmp_path / "root") == {"data root": str((tmp_path / "root").resolve()),
                                                    "base model": str(tiny_bert_dir.resolve()),
                                                    "data_dir": str(tmp_path.resolve())}
