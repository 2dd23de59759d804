"""Sentence segmentation of a corpus: stock pysbd (``Segmenter(language="en", clean=False)``) against
defsentflow's segmenter (the same pysbd rules; each sentence found back in the text with ``str.find``
instead of one compiled regular expression per sentence: defsentflow/corpus/segment.py). Both must
give the same sentences; the script checks it on every paragraph.

    python bench/segment.py [N_PARAGRAPHS] [CORPUS_DIR]

Corpus: BBC news (all five sections) and Pride and Prejudice from ../shared/data, else the embedded
sample. One process; prints the CPU seconds of both (median of 3 repeats, run alternately) and the ratio.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "corpus"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def main(n: int, folder: Path) -> None:
    import pysbd

    from defsentflow.corpus.segment import _segmenter, split_paragraphs

    files = sorted(folder.rglob("*.txt"))
    paras = [p for f in files for p in split_paragraphs(f.read_text(errors="replace"))][:n]
    ways = {"stock pysbd": pysbd.Segmenter(language="en", clean=False), "defsentflow": _segmenter()}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    results = {}
    for _ in range(3):
        for name, seg in ways.items():
            t0 = _cpu()
            results[name] = [seg.segment(p) for p in paras]
            seconds[name].append(_cpu() - t0)
    assert results["stock pysbd"] == results["defsentflow"], "the segmenters disagree"
    n_sents = sum(map(len, results["defsentflow"]))
    print(f"{folder}: {len(files)} files, {len(paras)} paragraphs, {n_sents} sentences (the same from both)")
    med = {name: statistics.median(s) for name, s in seconds.items()}
    for name, s in seconds.items():
        print(f"  {name:12s} {med[name]:7.3f} s of CPU (median of {len(s)}: {', '.join(f'{x:.3f}' for x in s)})")
    print(f"  speed-up {med['stock pysbd'] / med['defsentflow']:.2f}x")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10**9
    folder = Path(sys.argv[2]) if len(sys.argv) > 2 else (SHARED if SHARED.exists() else REPO / "defsentflow" / "sample" / "corpus")
    main(n, folder)
