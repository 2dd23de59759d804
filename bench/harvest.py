"""Pair labelling once context scores are cached: the vectorised labeller against a per-pair loop.

    python bench/harvest.py HARVEST_DIR [--repeats 3]

HARVEST_DIR is a finished harvest artifact (``<home>/parquet/harvest/<corpus>/<key>``, printed by
``defsentflow harvest CONFIG`` as the parent of ``pairs.parquet``). Both sides label every stored
pair from the stored context sets and the cached scores ``S(s, c)`` (the ``parts/scores-*.parquet``
files), with no scorer: ours is :func:`defsentflow.scoring.pair_similarities` over the sorted-array
:class:`~defsentflow.scoring.ScoreCache`; the naive way looks every score up in a Python dict and
takes one numpy cosine per pair. Both must reproduce the stored labels (within 1e-5). The last line
is ``ratio=<ours pairs/s / naive pairs/s>``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq


def _context_sets(table) -> dict[int, np.ndarray]:
    sets: dict[int, np.ndarray] = {}
    for sid_col, ctx_col in (("s1_id", "s1_contexts"), ("s2_id", "s2_contexts")):
        for sid, ctx in zip(table.column(sid_col).to_pylist(), table.column(ctx_col).to_pylist()):
            sets.setdefault(sid, np.asarray(ctx, dtype=np.int64))
    return sets


def _naive(pairs: np.ndarray, sets: dict[int, np.ndarray], scores: dict[tuple[int, int], float]) -> np.ndarray:
    out = np.zeros(len(pairs), dtype=np.float32)
    for k, (a, b) in enumerate(pairs.tolist()):
        contexts = sets[a].tolist() + sets[b].tolist()
        v1 = np.array([scores[(a, c)] for c in contexts])
        v2 = np.array([scores[(b, c)] for c in contexts])
        denom = np.linalg.norm(v1) * np.linalg.norm(v2)
        out[k] = float(v1 @ v2 / denom) if denom > 0 else 0.0
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("harvest_dir", type=Path)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    from defsentflow.scoring import ScoreCache, pair_similarities

    d = args.harvest_dir
    pairs_path = d / "pairs.parquet"
    score_paths = sorted((d / "parts").glob("scores-*.parquet"))
    if not pairs_path.is_file() or not score_paths:
        print(f"{d}: not a finished harvest (needs pairs.parquet and parts/scores-*.parquet)", file=sys.stderr)
        return 2
    manifest = json.loads((d / "manifest.json").read_text()) if (d / "manifest.json").is_file() else {}
    if manifest.get("config", {}).get("pairs", {}).get("similarity", "cosine") != "cosine":
        print("the benchmark compares plain cosine labels; this harvest used another similarity", file=sys.stderr)
        return 2
    table = pq.read_table(pairs_path)
    stored = table.column("score").to_numpy()
    pairs = np.stack([table.column("s1_id").to_numpy(), table.column("s2_id").to_numpy()], axis=1)
    sets = _context_sets(table)
    version = table.column("scorer_version")[0].as_py()
    cache = ScoreCache.load(version, score_paths)
    naive_scores: dict[tuple[int, int], float] = {}
    for p in score_paths:
        t = pq.read_table(p, columns=["sentence_id", "context_id", "score"])
        sid, cid, val = (t.column(c).to_numpy() for c in ("sentence_id", "context_id", "score"))
        naive_scores.update(zip(zip(sid.tolist(), cid.tolist()), val.tolist()))
    print(f"{len(pairs)} pairs, {len(sets)} sentences with context sets, {len(cache)} cached scores; scorer {version}")

    ours_t, naive_t = [], []
    for r in range(args.repeats):
        t0 = time.perf_counter()
        ours = pair_similarities(pairs, sets, cache)
        t1 = time.perf_counter()
        naive = _naive(pairs, sets, naive_scores)
        t2 = time.perf_counter()
        ours_t.append(t1 - t0)
        naive_t.append(t2 - t1)
        print(f"  repeat {r + 1}: ours {len(pairs) / (t1 - t0):,.0f} pairs/s, naive {len(pairs) / (t2 - t1):,.0f} pairs/s")
    err_ours = float(np.abs(ours - stored).max())
    err_naive = float(np.abs(naive - stored).max())
    ours_rate = len(pairs) / statistics.median(ours_t)
    naive_rate = len(pairs) / statistics.median(naive_t)
    print(f"ours (vectorised, sorted-array cache): {ours_rate:,.0f} pairs/s, median of {args.repeats}")
    print(f"naive (dict lookups, one cosine per pair): {naive_rate:,.0f} pairs/s, median of {args.repeats}")
    print(f"max |label - stored|: ours {err_ours:.2e}, naive {err_naive:.2e} ({'OK' if max(err_ours, err_naive) < 1e-5 else 'MISMATCH'} at 1e-5)")
    print(f"labels: mean {stored.mean():.4f}, std {stored.std():.4f}, "
          f"quartiles {np.quantile(stored, [0.25, 0.5, 0.75]).round(4).tolist()}")
    print(f"ratio={ours_rate / naive_rate:.1f}")
    return 0 if max(err_ours, err_naive) < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
