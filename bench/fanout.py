"""PST four ways: sequential with all the cores' threads, sequential at the workers' thread count (the
default now), fanned out to a LocalCluster of single-threaded worker processes, and fanned out to the
same number of workers on another host (a network namespace joined by a veth pair, tests/netns.py;
skipped where namespaces cannot be made, or with --no-netns).

    python bench/fanout.py                                   # configs/fanout-demo.yaml, median of 3
    python bench/fanout.py --repeats 1 --max-train-entries 120 --steps 1   # a quicker, smaller PST
    python bench/fanout.py --data-dir /path/to/shared/data   # STS-B dev selection from there

Each run starts from a fresh data root (the dictionary ingested once and copied), so every candidate
trains. Prints each way's wall time (median), CPU seconds per candidate (the process CPU time of the
candidate call, on its worker for the fan-out), the load average before and after, then for each
cluster (``case=local`` and ``case=netns``) ``identical=yes|no`` (every candidate's key and score and
the chosen one equal to the sequential run at equal threads per candidate), ``efficiency=``
(sequential at the workers' threads / (workers x fan-out wall); target >= 0.8) and ``ratio=`` (the
all-cores sequential wall / fan-out wall).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def timed_call(fn, call):
    """One fan-out call, with the CPU seconds of its process while it ran (single-threaded workers:
    the candidate's own; in process: the candidate's, its intra-op threads included)."""
    from defsentflow.fanout import call_one

    c0 = time.process_time()
    result = call_one(fn, call)
    if not isinstance(result, dict):  # an entry-matrix shard (its file's path), not a candidate
        return result
    return {**result, "cpu_seconds": time.process_time() - c0}


def timing(inner):
    """A fan-out that records every call's CPU seconds in ``timing.cpu`` (with ``submit`` where
    ``inner`` has it: on a cluster, calls may start before their results are asked for)."""
    from defsentflow.fanout import runs_beside
    from defsentflow.fanout import submit as start

    cpu: list[float] = []

    def submit(fn, calls):
        wait = start(inner, timed_call, [(fn, c) for c in calls])

        def results():
            out = wait()
            cpu.extend(r["cpu_seconds"] for r in out if isinstance(r, dict) and "cpu_seconds" in r)
            return out

        return results

    def fan_out(fn, calls):
        return submit(fn, calls)()

    if runs_beside(inner):
        fan_out.submit = submit
    fan_out.cpu = cpu
    return fan_out


def load(config: str, args: argparse.Namespace):
    from defsentflow.config import load_config

    cfg = load_config(config)
    update = {k: v for k, v in (("max_train_entries", args.max_train_entries), ("steps", args.steps),
                                ("data_dir", args.data_dir)) if v}
    return cfg, cfg.pst.model_copy(update=update)


def template_root(cfg, base: Path) -> Path:
    from defsentflow.dictionary.ingest import ingest_dictionary

    root = base / "template"
    root.mkdir(parents=True, exist_ok=True)
    ingest_dictionary(cfg.dictionary, root=root)
    return root


def one_run(section, template: Path, base: Path, label: str, steps) -> dict:
    from defsentflow.training.pst import run_pst

    root = base / f"{label}-{time.monotonic_ns()}"
    shutil.copytree(template, root)
    os.environ["DEFSENTFLOW_HOME"] = str(root)
    t0 = time.perf_counter()
    res = run_pst(section, run_id="bench", root=root, steps=steps)
    wall = time.perf_counter() - t0
    cands = [(c.step, c.seed, c.group, c.artifact_key, c.score) for s in res.steps for c in s.candidates if c.step]
    return {"wall": wall, "cpu": list(steps.fan_out.cpu), "candidates": cands, "steps": [s.seconds for s in res.steps],
            "winner": (res.winner.artifact_key, res.winner.score), "root": root}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(REPO / "configs" / "fanout-demo.yaml"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-train-entries", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--data-dir", default=None, help="STS data (default: the config's data_dir)")
    ap.add_argument("--no-netns", action="store_true", help="skip the workers on another host")
    args = ap.parse_args()
    os.chdir(REPO)
    base = Path(tempfile.mkdtemp(prefix="bench-fanout-"))
    os.environ["DEFSENTFLOW_HOME"] = str(base / "template")
    os.environ.setdefault("PREFECT_HOME", str(base / "prefect"))
    from defsentflow.compute import ComputeSection
    from defsentflow.fanout import Sequential
    from defsentflow.tasks.cluster import api_host, compute_cluster
    from defsentflow.tasks.fanout import DaskFanOut
    from defsentflow.tasks.server import local_api
    from defsentflow.training.pst import PstSteps
    from tests.netns import netns_cluster, netns_unavailable

    cfg, section = load(args.config, args)
    template = template_root(cfg, base)
    cores = os.cpu_count() or 1
    why_not = "--no-netns" if args.no_netns else netns_unavailable()
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {"default": [], "seq1": [], "local": [], "netns": []}

    def fanned(address: str, key: str) -> None:
        with local_api(host=api_host(address)):
            runs[key].append(one_run(section, template, base, key, PstSteps(
                threads=1, fan_out=timing(DaskFanOut(address, name="pst-candidate")))))

    for _ in range(args.repeats):
        runs["default"].append(one_run(section, template, base, "default", PstSteps(
            threads=cores, fan_out=timing(Sequential(cores)))))
        runs["seq1"].append(one_run(section, template, base, "seq1", PstSteps(
            threads=1, fan_out=timing(Sequential(1)))))
        with compute_cluster(ComputeSection(local_workers=args.workers)) as address:
            fanned(address, "local")
        if why_not is None:
            with netns_cluster(base / "netns", workers=args.workers) as c, \
                    compute_cluster(ComputeSection(address=c.address)) as address:
                fanned(address, "netns")
    load_after = os.getloadavg()
    runs = {k: v for k, v in runs.items() if v}
    wall = {k: statistics.median(r["wall"] for r in v) for k, v in runs.items()}
    cpu = {k: statistics.median(c for r in v for c in r["cpu"]) for k, v in runs.items()}
    ref = runs["seq1"][0]
    close = all(abs(a[4] - b[4]) <= 0.0005 for r in runs["default"] for a, b in zip(r["candidates"], ref["candidates"]))
    n = len(ref["candidates"])
    print(f"config={args.config} pst: {section.steps} steps, {len(section.grid)} combinations x {len(section.seeds)} "
          f"seeds, max_train_entries={section.max_train_entries}; {n} trained candidates; repeats={args.repeats}")
    print(f"load_before={load_before[0]:.2f},{load_before[1]:.2f},{load_before[2]:.2f}")
    labels = {"default": f"sequential, all {cores} cores' threads", "seq1": "sequential, 1 thread per candidate",
              "local": f"--local-workers {args.workers} (1 thread each)",
              "netns": f"{args.workers} workers on another host (network namespace, 1 thread each)"}
    for k, v in runs.items():
        per_step = ", ".join(f"{statistics.median(r['steps'][i] for r in v):.1f}" for i in range(len(v[0]["steps"])))
        print(f"{labels[k]}: wall {wall[k]:.1f}s, cpu per candidate {cpu[k]:.2f}s; seconds per PST step 0.. {per_step}")
    print(f"default_threads_scores_within_0.0005={'yes' if close else 'no'}")
    print(f"load_after={load_after[0]:.2f},{load_after[1]:.2f},{load_after[2]:.2f}")
    if why_not is not None:
        print(f"case=netns skipped: {why_not}")
    identical_all = True
    for k in ("local", "netns"):
        if k not in runs:
            continue
        identical = all(r["candidates"] == ref["candidates"] and r["winner"] == ref["winner"]
                        for r in runs["seq1"] + runs[k])
        identical_all &= identical
        print(f"case={k}")
        print(f"cpu_per_candidate_{k}/seq1={cpu[k] / cpu['seq1']:.3f}")
        print(f"identical={'yes' if identical else 'no'}")
        print(f"efficiency={wall['seq1'] / (args.workers * wall[k]):.3f}")
        print(f"ratio={wall['default'] / wall[k]:.3f}")
    shutil.rmtree(base, ignore_errors=True)
    return 0 if identical_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
