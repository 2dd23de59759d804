"""The diverse context sets (Sun et al.'s C_s) of many sentences: word sets built again for each
sentence's candidates (``previous_words``, the way until 2026-11-28) against rows sliced from one
corpus word matrix built once (``word_matrix``, what the harvest uses now). Both must choose the same
contexts; the script checks it on every sentence.

    python bench/context_sets.py [N_SENTENCES] [CORPUS_DIR]

Corpus: BBC entertainment from ../shared/data (the surrogate control's context corpus), else the
embedded sample. Each sentence gets 100 retrieved chunks of 8 slots (800 candidates, random scores),
|C_s| = 100, max Jaccard 0.5, as configs/harvest-raw-ci-surrogate.yaml. Prints the CPU seconds of
both (median of 5 repeats; the matrix's one-time build counted in every repeat) and their ratio.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from defsentflow.scoring import select_context_set, word_set
from defsentflow.scoring.context_sets import previous_word_matrix

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "corpus" / "bbc" / "entertainment"


def corpus(folder: Path) -> tuple[list[str], np.ndarray]:
    """Sentences (a plain split on sentence ends: the bench needs realistic word sets, not pysbd) and
    per sentence its document's first sentence id."""
    texts, starts = [], []
    for f in sorted(folder.rglob("*.txt")):
        sents = [s for s in re.split(r"(?<=[.!?])\s+", f.read_text(errors="replace")) if s.strip()]
        starts += [len(texts)] * len(sents)
        texts += sents
    return texts, np.asarray(starts, dtype=np.int64)


def main(n: int, folder: Path) -> None:
    texts, doc_start = corpus(folder)
    rng = np.random.default_rng(0)
    n_chunks = len(texts) // 8
    queries = []
    for _ in range(n):
        chunks = rng.choice(n_chunks, size=min(100, n_chunks), replace=False)
        cids = (chunks[:, None] * 8 + np.arange(8)).ravel()
        queries.append((cids, np.repeat(chunks, 8), rng.normal(size=len(cids))))

    def per_sentence() -> list[list[int]]:
        cache: dict[int, frozenset[str]] = {}  # as HarvestResources.words: each sentence's set once

        def words(i: int) -> frozenset[str]:
            if i not in cache:
                cache[i] = word_set(texts[i])
            return cache[i]

        prev = lambda c: words(c - 1) if c > doc_start[c] else frozenset()  # noqa: E731
        return [select_context_set(c, ch, s, 100, previous_words=prev, max_jaccard=0.5).tolist() for c, ch, s in queries]

    def one_matrix() -> list[list[int]]:
        matrix = previous_word_matrix(lambda c: word_set(texts[c - 1]) if c > doc_start[c] else frozenset(), len(texts))
        return [select_context_set(c, ch, s, 100, word_matrix=matrix, max_jaccard=0.5).tolist() for c, ch, s in queries]

    times: dict[str, list[float]] = {"per sentence": [], "one matrix": []}
    for _ in range(5):
        for name, fn in (("per sentence", per_sentence), ("one matrix", one_matrix)):
            t = time.process_time()
            got = fn()
            times[name].append(time.process_time() - t)
            if name == "per sentence":
                want = got
            else:
                assert got == want, "the two ways chose different context sets"
    a, b = statistics.median(times["per sentence"]), statistics.median(times["one matrix"])
    print(f"{n} sentences, {len(texts)} corpus sentences ({folder.name}), 800 candidates each, |C_s| <= 100:")
    print(f"  word sets per sentence: {a:.3f} s CPU; one corpus word matrix: {b:.3f} s CPU; {a / b:.1f}x "
          "(median of 5; the same context sets)")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    folder = Path(sys.argv[2]) if len(sys.argv) > 2 else SHARED if SHARED.is_dir() else REPO / "defsentflow" / "sample" / "corpus"
    main(n, folder)
