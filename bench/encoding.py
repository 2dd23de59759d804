"""Encoding throughput of ``encode_texts`` (fp32 and bf16) vs a plain length-sorted loop; bf16 accuracy on STS-B dev.

    python bench/encoding.py [--definitions 3000] [--repeats 3] [--threads N]

Definitions are distinct OEWN glosses; the model is the bundled all-MiniLM-L6-v2, mean pooling.
"plain" is the straightforward engine: sort by length, fixed batches of 128 padded to their
longest, fp32. Repeats alternate the variants so a machine shared with other jobs slows all of
them alike; medians are reported along with the load average. Then STS-B dev (1,500 pairs) is
encoded in fp32 and bf16 and the Spearman correlations of the cosines are compared (target:
within 0.1 points). Ratios are medians of the per-repeat ratios. On a shared 2-core machine
``--threads 1`` gives figures that busy neighbours disturb much less. The last line is
``ratio=<bf16 / plain>``.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from entry_embeddings import DEFAULT_YAML, load_oewn_pairs  # noqa: E402

DEFAULT_STSB = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "sts" / "STSBenchmark" / "sts-dev.csv"


def plain_loop(enc, texts: list[str], batch_size: int = 128, max_length: int = 128) -> np.ndarray:
    """Length-sorted fixed-size batches, fp32, mean pooling: the baseline."""
    from defsentflow.encoders.encoding import pad_batch, tokenize_sorted
    from defsentflow.encoders.pooling import pool

    ids, order = tokenize_sorted(enc.tokenizer, texts, max_length)
    out = np.zeros((len(texts), enc.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            b = pad_batch([ids[i] for i in idx], enc.tokenizer.pad_token_id, enc.device)
            h = enc.model(**b).last_hidden_state
            out[idx] = pool(h, b["attention_mask"], "mean").numpy()
    return out


def read_stsb(path: str | os.PathLike) -> tuple[list[str], list[str], np.ndarray]:
    a, b, gold = [], [], []
    with open(path, encoding="utf-8") as fh:
        for no, row in enumerate(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
            if len(row) < 7:
                raise ValueError(f"{path}:{no}: expected 7 tab-separated fields, got {len(row)}")
            gold.append(float(row[4]))
            a.append(row[5])
            b.append(row[6])
    return a, b, np.array(gold)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--yaml-dir", default=str(DEFAULT_YAML))
    ap.add_argument("--stsb", default=str(DEFAULT_STSB))
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--definitions", type=int, default=3000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave as is)")
    ap.add_argument("--sts-limit", type=int, default=0, help="first N STS-B dev pairs only (0: all)")
    args = ap.parse_args()

    os.environ.setdefault("DEFSENTFLOW_QUIET", "1")
    from scipy.stats import spearmanr

    from defsentflow.encoders import encode_texts, load_encoder

    if args.threads:
        torch.set_num_threads(args.threads)
    pairs = load_oewn_pairs(args.yaml_dir, args.definitions)
    texts = list(dict.fromkeys(d for _, d in pairs))[: args.definitions]
    enc = load_encoder(args.model, device="cpu")
    enc.model.eval()
    lengths = np.array([len(x) for x in enc.tokenizer(texts)["input_ids"]])
    print(f"{len(texts)} distinct definitions, {lengths.mean():.1f} tokens on average; torch threads "
          f"{torch.get_num_threads()}; bf16 CPU support: {torch.backends.mkldnn.is_available()}; "
          f"load average {os.getloadavg()[0]:.2f}")
    variants = {
        "plain": lambda: plain_loop(enc, texts, args.batch_size),
        "fp32": lambda: encode_texts(enc, texts, pooling="mean", batch_size=args.batch_size),
        "bf16": lambda: encode_texts(enc, texts, pooling="mean", batch_size=args.batch_size, autocast="bf16"),
    }
    encode_texts(enc, texts[:200], pooling="mean", autocast="bf16")  # warm-up
    rates: dict[str, list[float]] = {k: [] for k in variants}
    cpu_rates: dict[str, list[float]] = {k: [] for k in variants}
    outputs = {}
    for r in range(args.repeats):
        for name, fn in variants.items():
            t, c = time.perf_counter(), time.process_time()
            outputs[name] = fn()
            rates[name].append(len(texts) / (time.perf_counter() - t))
            cpu_rates[name].append(len(texts) / (time.process_time() - c))
        print(f"  repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f}/s" for k, v in rates.items())
              + f"; load {os.getloadavg()[0]:.2f}")
    med = {k: statistics.median(v) for k, v in rates.items()}
    diff = float(np.abs(outputs["fp32"] - outputs["plain"]).max())
    for k in variants:
        print(f"{k:>5}: {med[k]:.0f} definitions/s (median of {args.repeats}); "
              f"{statistics.median(cpu_rates[k]):.0f} definitions per CPU-second")
    print(f"max |fp32 - plain| = {diff:.1e}")

    a, b, gold = read_stsb(args.stsb)
    if args.sts_limit:
        a, b, gold = a[: args.sts_limit], b[: args.sts_limit], gold[: args.sts_limit]
    scores = {}
    for ac in ("none", "bf16"):
        va = encode_texts(enc, a, pooling="mean", normalize=True, autocast=ac)
        vb = encode_texts(enc, b, pooling="mean", normalize=True, autocast=ac)
        scores[ac] = 100 * spearmanr((va * vb).sum(1), gold).statistic
    gap = abs(scores["bf16"] - scores["none"])
    print(f"STS-B dev Spearman x100 ({len(gold)} pairs): fp32 {scores['none']:.3f}, bf16 {scores['bf16']:.3f}, "
          f"|diff| {gap:.3f} ({'OK' if gap <= 0.1 else 'OVER'} at 0.1)")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    def ratio(name: str) -> float:
        return statistics.median(a / b for a, b in zip(rates[name], rates["plain"]))

    print(f"fp32_ratio={ratio('fp32'):.2f}")
    print(f"ratio={ratio('bf16'):.2f}")


if __name__ == "__main__":
    main()
