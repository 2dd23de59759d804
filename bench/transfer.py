"""Transfer tasks on the bundled MiniLM (mean pooling): time and figures of ``sick-e`` and ``bbc-topics``.

    OMP_NUM_THREADS=1 python bench/transfer.py [--data-dir ../shared/data] [--repeats 3] [--seeds 1111,1112,1113]
    OMP_NUM_THREADS=1 python bench/transfer.py --only stsb-sup,sickr-sup   # other tasks, once each

Ours is ``evaluation.transfer.run_task``: every distinct sentence of every split encoded once by
``encode_texts`` (mean pooling, fp32), then SentEval's scheme with the whole C grid in this process.
The naive baseline encodes the way SentEval's tasks call a batcher: each split and each side of a
pair on its own, every record (duplicates included), fixed batches of 128 in SentEval's length order
(``bench/encoding.plain_loop``); its probe is the same. Repeats alternate the two; medians are
printed with the load average. ``bbc-topics`` (SentEval's inner 10-fold) is run once per probe seed
(the folds move with the seed; its titles encoded once for all seeds) and reported as mean and sd;
``sick-e`` (train / dev = trial, C on dev) has no seed that moves it (lbfgs is deterministic), so
its figure is one number. The last line is ``ratio=<naive / ours>`` of sick-e's median wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoding import plain_loop  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def naive_encode_splits(enc, splits):
    """Each split and side encoded on its own, in SentEval's order, no duplicate removed."""
    from defsentflow.evaluation.transfer import senteval_order

    out = {}
    for name, sp in splits.items():
        order = senteval_order(sp)
        sides = (sp.a,) if sp.b is None else (sp.a, sp.b)
        inverse = np.argsort(order)
        out[name] = tuple(plain_loop(enc, [side[i] for i in order])[inverse] for side in sides)
    return out


def run_naive(task_name: str, data_dir, enc) -> tuple[dict[str, float], float, float]:
    from defsentflow.evaluation import transfer
    from defsentflow.evaluation.transfer_data import TASKS, load_splits

    task = TASKS[task_name]
    splits = load_splits(task, data_dir)
    t0 = time.perf_counter()
    vecs = naive_encode_splits(enc, splits)
    t1 = time.perf_counter()
    scores, _ = transfer.score_vectors(task, splits, vecs)
    return scores, t1 - t0, time.perf_counter() - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(DEFAULT_DATA))
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--repeats", type=int, default=3, help="sick-e repeats of each variant")
    ap.add_argument("--seeds", default="1111,1112,1113", help="bbc-topics probe seeds")
    ap.add_argument("--only", default="", help="instead: run these tasks once each (e.g. stsb-sup,sickr-sup)")
    args = ap.parse_args()
    os.environ.setdefault("DEFSENTFLOW_QUIET", "1")
    from defsentflow.encoders import encode_texts, load_encoder
    from defsentflow.evaluation.transfer import run_task, run_task_seeds, seed_stats
    from defsentflow.evaluation.transfer_data import TASKS

    enc = load_encoder(args.model, device="cpu")
    enc.model.eval()

    def encode(texts: list[str]) -> np.ndarray:
        return encode_texts(enc, texts, pooling="mean")

    encode(["warm up"] * 8)
    print(f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.2f}")
    for name in filter(None, args.only.split(",")):
        t, c = time.perf_counter(), time.process_time()
        res = run_task(name, args.data_dir, encode)
        print(f"{name} ({res.n}; protocol {res.protocol_hash}): {res.scores}; {time.perf_counter() - t:.1f} s wall, "
              f"{time.process_time() - c:.1f} s CPU (encode {res.seconds['encode']:.1f}, probe {res.seconds['probe']:.1f})")
    if args.only:
        return
    walls: dict[str, list[float]] = {"ours": [], "naive": []}
    cpus: dict[str, list[float]] = {"ours": [], "naive": []}
    for r in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        ours = run_task("sick-e", args.data_dir, encode)
        walls["ours"].append(time.perf_counter() - t)
        cpus["ours"].append(time.process_time() - c)
        t, c = time.perf_counter(), time.process_time()
        naive, enc_s, probe_s = run_naive("sick-e", args.data_dir, enc)
        walls["naive"].append(time.perf_counter() - t)
        cpus["naive"].append(time.process_time() - c)
        print(f"  sick-e repeat {r + 1}: ours {walls['ours'][-1]:.1f} s wall, {cpus['ours'][-1]:.1f} s CPU (encode "
              f"{ours.seconds['encode']:.1f}, probe {ours.seconds['probe']:.1f}; {ours.n_unique_sentences} distinct "
              f"sentences), naive {walls['naive'][-1]:.1f} s wall, {cpus['naive'][-1]:.1f} s CPU (encode {enc_s:.1f}, "
              f"probe {probe_s:.1f}); load {os.getloadavg()[0]:.2f}")
    print(f"sick-e ({ours.n['train']} train, {ours.n['dev']} dev = trial; protocol {ours.protocol_hash}): "
          f"dev acc {ours.scores['dev_acc']:.2f} at C={ours.chosen_c[0]} (naive encoding: {naive['dev_acc']:.2f}); "
          f"{ours.unconverged} fits at max_iter; medians ours {statistics.median(walls['ours']):.1f} s wall / "
          f"{statistics.median(cpus['ours']):.1f} s CPU, naive {statistics.median(walls['naive']):.1f} s / "
          f"{statistics.median(cpus['naive']):.1f} s")

    seeds = [int(s) for s in args.seeds.split(",")]
    t, c = time.perf_counter(), time.process_time()
    runs = run_task_seeds("bbc-topics", args.data_dir, encode, seeds)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    for seed, res in zip(seeds, runs):
        print(f"  bbc-topics seed {seed}: test acc {res.scores['test_acc']:.2f} (inner dev {res.scores['dev_acc']:.2f}), "
              f"C per fold {list(res.chosen_c)}; encode {res.seconds['encode']:.1f} s, probe {res.seconds['probe']:.1f} s; "
              f"{res.unconverged} fits at max_iter")
    mean, sd = seed_stats(runs)["test_acc"]
    print(f"bbc-topics ({runs[0].n['train']} titles, {runs[0].n_unique_sentences} distinct, "
          f"{TASKS['bbc-topics'].kfold}-fold inner; protocol {runs[0].protocol_hash} at seed {seeds[0]}): "
          f"acc {mean:.2f} +- {sd:.2f} over seeds {seeds}; {wall:.1f} s wall, {cpu:.1f} s CPU for all seeds; load {os.getloadavg()[0]:.2f}")
    t, c = time.perf_counter(), time.process_time()
    naive_bbc, enc_s, probe_s = run_naive("bbc-topics", args.data_dir, enc)
    print(f"  bbc-topics naive (seed {TASKS['bbc-topics'].seed}): acc {naive_bbc['test_acc']:.2f}, "
          f"{time.perf_counter() - t:.1f} s wall, {time.process_time() - c:.1f} s CPU (encode {enc_s:.1f}, "
          f"probe {probe_s:.1f})")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"ratio={statistics.median(walls['naive']) / statistics.median(walls['ours']):.2f}")


if __name__ == "__main__":
    main()
