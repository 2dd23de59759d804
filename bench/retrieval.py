"""Retrieval benchmark on the BBC corpus: sparse BM25 / TF-IDF against rank-bm25 and bm25s.

    python bench/retrieval.py [PATH] [--queries 10000] [--baseline 500] [--repeats 3] [--bm25s robertson,lucene]

Ingests PATH (default ``../shared/data/corpus/bbc`` beside the repository) into a temporary data
root (or ``--home``), builds both indexes over the chunks, takes a deterministic sample of corpus
sentences as queries and retrieves the top 100 chunks for each. rank-bm25's ``get_scores`` is
timed per query on a subset and extrapolated; the top-10 lists of the two BM25s are compared on
that subset. Each bm25s method (same tokens) retrieves the top 100 for every query; its lists are
compared with ours: the share of queries whose top-100 *set* and top-10 *list* are the same, and the
mean overlap of the top-100 sets. The last line is ``ratio=<rank-bm25 seconds per query / ours>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(REPO.parent / "shared" / "data" / "corpus" / "bbc"))
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--baseline", type=int, default=500, help="queries timed with rank-bm25 (extrapolated)")
    ap.add_argument("--top-n", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--home", help="data root (default: a fresh temporary one, so ingest is measured)")
    ap.add_argument("--bm25s", default="robertson,lucene,atire",
                    help="bm25s methods compared with ours, comma-separated ('' to skip; needs bm25s)")
    args = ap.parse_args(argv)
    if not Path(args.path).is_dir():
        print(f"corpus not found: {args.path}", file=sys.stderr)
        return 2
    os.environ.setdefault("DEFSENTFLOW_QUIET", "1")
    tmp = None
    if not args.home:
        tmp = tempfile.TemporaryDirectory(prefix="defsentflow-bench-")
        args.home = tmp.name

    from rank_bm25 import BM25Okapi

    from defsentflow.corpus import ingest_corpus, load_chunks, load_sentences
    from defsentflow.retrieval import Bm25Index, TfidfIndex, rank_order, tokenize

    print(f"corpus: {args.path}   data root: {args.home}   cpus: {os.cpu_count()}")
    res = ingest_corpus([args.path], "bench-bbc", root=args.home)
    print(f"ingest: {res.documents} documents, {res.paragraphs} paragraphs, {res.sentences} sentences, {res.chunks} chunks, "
          f"{res.quarantined} quarantined, {res.repaired} repaired line(s) in {res.seconds:.1f}s"
          f"{' (cached)' if res.cached else ''}")
    chunks = load_chunks(res.key, root=args.home).column("text").to_pylist()
    sentences = load_sentences(res.key, root=args.home).column("text").to_pylist()
    rng = np.random.default_rng(args.seed)
    pick = rng.choice(len(sentences), size=min(args.queries, len(sentences)), replace=False)
    queries = [sentences[i] for i in pick]
    nq, n = len(queries), args.top_n
    print(f"queries: {nq} corpus sentences (seed {args.seed}); top-{n} chunks of {len(chunks)}")

    t0 = time.perf_counter()
    bm25 = Bm25Index().build(chunks)
    t_bm25_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    tfidf = TfidfIndex().build(chunks)
    t_tfidf_build = time.perf_counter() - t0
    print(f"build: bm25 {t_bm25_build:.1f}s ({len(bm25.vocab)} terms), tfidf {t_tfidf_build:.1f}s "
          f"({len(tfidf.vectorizer.vocabulary_)} uni+bi-grams)")

    t_bm25, (ids, _) = _median_time(lambda: bm25.search(queries, n), args.repeats)
    t_tfidf, _ = _median_time(lambda: tfidf.search(queries, n), args.repeats)
    print(f"bm25 (ours):  {nq} queries in {t_bm25:.2f}s = {nq / t_bm25:,.0f} queries/s  (median of {args.repeats})")
    print(f"tfidf (ours): {nq} queries in {t_tfidf:.2f}s = {nq / t_tfidf:,.0f} queries/s  (median of {args.repeats})")

    nb = min(args.baseline, nq)
    t0 = time.perf_counter()
    ref = BM25Okapi([tokenize(c) for c in chunks])
    t_ref_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref_scores = [ref.get_scores(tokenize(q)) for q in queries[:nb]]
    t_ref = time.perf_counter() - t0
    per_ref, per_ours = t_ref / nb, t_bm25 / nq
    print(f"rank-bm25:    build {t_ref_build:.1f}s; get_scores on the first {nb} queries in {t_ref:.2f}s "
          f"= {nb / t_ref:,.1f} queries/s (one pass); extrapolated to {nq} queries: {per_ref * nq:.0f}s")

    same = sum(ids[i, :10].tolist() == rank_order(s)[:10].tolist() for i, s in enumerate(ref_scores))
    max_diff = max(float(np.abs(bm25.scores([q])[0] - s).max()) for q, s in zip(queries[:nb], ref_scores))
    print(f"top-10 identical to rank-bm25 (score desc, then id): {same}/{nb}; max |score difference| {max_diff:.2e}")
    print(f"targets: all {nq} queries <= 30s: {'yes' if t_bm25 <= 30 else 'NO'} (bm25), {'yes' if t_tfidf <= 30 else 'NO'} (tfidf); "
          f"ratio >= 20: {'yes' if per_ref / per_ours >= 20 else 'NO'}")
    for method in [m for m in args.bm25s.split(",") if m]:
        _compare_bm25s(method, chunks, queries, ids, n, t_bm25, args.repeats)
    print(f"ratio={per_ref / per_ours:.1f}")
    if tmp is not None:
        tmp.cleanup()
    return 0 if same == nb else 1


def _compare_bm25s(method: str, chunks: list[str], queries: list[str], ours: np.ndarray, n: int, t_ours: float,
                   repeats: int) -> None:
    """bm25s (``method``, rank-bm25's k1/b) on our tokens: time and agreement with our top-n."""
    try:
        import bm25s
    except ImportError:
        print(f"bm25s {method}: skipped (pip install bm25s)")
        return

    from defsentflow.retrieval import tokenize

    t0 = time.perf_counter()
    index = bm25s.BM25(method=method, k1=1.5, b=0.75)
    index.index([tokenize(c) for c in chunks], show_progress=False)
    t_build = time.perf_counter() - t0
    q_tokens = [tokenize(q) for q in queries]
    t_search, (docs, _) = _median_time(
        lambda: index.retrieve(q_tokens, k=n, show_progress=False, n_threads=1), repeats)
    top_sets = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(ours, docs)]
    same_set = sum(k == n for k in top_sets)
    same_10 = sum(a[:10].tolist() == b[:10].tolist() for a, b in zip(ours, docs))
    nq = len(queries)
    print(f"bm25s {method}: build {t_build:.1f}s; {nq} queries in {t_search:.2f}s (ours {t_ours:.2f}s); "
          f"top-{n} set identical {same_set}/{nq}, mean top-{n} overlap {np.mean(top_sets) / n:.3f}, "
          f"top-10 list identical {same_10}/{nq}")


if __name__ == "__main__":
    sys.exit(main())
