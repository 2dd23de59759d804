"""SentEval's own code against ``evaluation/transfer.py``: the same figures from the same vectors.

    python bench/senteval_parity.py --senteval PATH/TO/SentEval [--data-dir ../shared/data]

``PATH/TO/SentEval`` is a checkout of facebookresearch/SentEval (the folder holding ``senteval/``);
it is imported, run with ``usepytorch: False, kfold: 10, seed: 1111`` (its scikit-learn path), and
never copied. Both sides get one toy encoder (a hashed bag of words, so the check costs seconds) on
files written to a temporary folder in SentEval's layout: MR from BBC sport / tech titles (inner
k-fold), TREC from titles of five topics under six labels (k-fold), MRPC from SICK pairs labelled by
relatedness >= 3.5 (k-fold, F1) and SICK-E from the SICK files, trial standing in for the held-back
test (split). Every figure must agree to SentEval's rounding; the last line is ``mismatches=<n>``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import warnings
import zlib
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PAIRS = (("mr", "MR"), ("trec", "TREC"), ("mrpc", "MRPC"), ("sick-e", "SICKEntailment"))
KEYS = (("devacc", "dev_acc"), ("acc", "test_acc"), ("f1", "test_f1"))


def bow(texts: list[str], dim: int = 128) -> np.ndarray:
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, zlib.crc32(w.encode()) % dim] += 1.0
    return out


def write_tasks(root: Path, data: Path) -> None:
    def titles(topic: str) -> list[str]:
        return [p.read_bytes().split(b"\n", 1)[0].decode() for p in sorted((data / "corpus" / "bbc" / topic).glob("*.txt"))]

    def put(rel: str, lines: list[str], encoding: str = "utf-8") -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n".join(lines) + "\n", encoding=encoding)

    put("MR/rt-polarity.pos", titles("sport")[:300], "latin-1")
    put("MR/rt-polarity.neg", titles("tech")[:300], "latin-1")
    train, test = [], []
    topics = ("business", "entertainment", "politics", "sport", "tech")
    for k, label in enumerate(("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")):
        rows = titles(topics[k % 5])[k * 40:(k + 1) * 40]
        train += [f"{label}:x {s}" for s in rows[:30]]
        test += [f"{label}:x {s}" for s in rows[30:]]
    put("TREC/train_5500.label", train, "latin-1")
    put("TREC/TREC_10.label", test, "latin-1")
    sick = data / "sick"
    for src, dst in (("SICK_train.txt", "SICK_train.txt"), ("SICK_trial.txt", "SICK_trial.txt"),
                     ("SICK_trial.txt", "SICK_test_annotated.txt")):
        (root / "SICK").mkdir(exist_ok=True)
        shutil.copy(sick / src, root / "SICK" / dst)
    rows = [r.split("\t") for r in (sick / "SICK_train.txt").read_text(encoding="utf-8").split("\n")[1:1201] if r]
    mrpc = [f"{int(float(r[3]) >= 3.5)}\t1\t2\t{r[1]}\t{r[2]}" for r in rows]
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    put("MRPC/msr_paraphrase_train.txt", [header, *mrpc[:900]])
    put("MRPC/msr_paraphrase_test.txt", [header, *mrpc[900:]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--senteval", required=True, help="a SentEval checkout (the folder holding senteval/)")
    ap.add_argument("--data-dir", default=str(DEFAULT_DATA))
    args = ap.parse_args()
    sys.path.insert(0, args.senteval)
    warnings.simplefilter("ignore")
    import senteval  # SentEval's own package, from the checkout given

    from defsentflow.evaluation.transfer import run_task

    mismatches = 0
    with tempfile.TemporaryDirectory() as tmp:
        write_tasks(Path(tmp) / "downstream", Path(args.data_dir))
        params = {"task_path": tmp, "usepytorch": False, "kfold": 10, "seed": 1111, "batch_size": 128}
        engine = senteval.engine.SE(params, lambda p, batch: bow([" ".join(s) for s in batch]), lambda p, s: None)
        for ours, theirs in PAIRS:
            ref, got = engine.eval([theirs])[theirs], run_task(ours, tmp, bow).scores
            pairs = [(float(ref[a]), got[b]) for a, b in KEYS if a in ref]
            bad = sum(abs(x - y) > 1e-9 for x, y in pairs)
            mismatches += bad
            print(f"{ours}: SentEval {[x for x, _ in pairs]}, ours {[y for _, y in pairs]}: {'same' if not bad else 'DIFFERENT'}")
    print(f"mismatches={mismatches}")


if __name__ == "__main__":
    main()
