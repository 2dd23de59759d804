"""Transfer tasks (evaluation/transfer*.py): SentEval's readers, its three validation schemes, the protocol hash."""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from defsentflow.evaluation import transfer_regress
from defsentflow.evaluation.transfer import (
    encode_splits,
    features,
    inner_kfold_classifier,
    kfold_classifier,
    run_task,
    run_task_seeds,
    seed_stats,
    senteval_order,
    split_classifier,
)
from defsentflow.evaluation.transfer_data import (
    TASKS,
    Split,
    TransferDataMissing,
    TransferFormatError,
    available_tasks,
    load_splits,
    locate,
)
from defsentflow.evaluation.transfer_regress import regress, tai_targets

REGS = [2.0 ** t for t in (-2, -1, 0, 1, 2, 3)]
SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"


def bow(texts: list[str], dim: int = 256) -> np.ndarray:
    """A hashed bag of words: the toy encoder of the end-to-end runs."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, zlib.crc32(w.encode()) % dim] += 1.0
    return out


def write(path: Path, lines: list[str], encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))
    return path


def blobs(n: int, classes: int, dim: int = 8, sep: float = 4.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    return rng.normal(size=(n, dim)) + sep * np.eye(classes, dim)[y], y


# -- readers -------------------------------------------------------------------------------------

def test_readers_read_senteval_formats(tmp_path):
    se = tmp_path / "senteval"
    write(se / "MR" / "rt-polarity.pos", ["a  fine\tfilm", "caf\xe9 good"], "latin-1")
    write(se / "MR" / "rt-polarity.neg", ["dull"], "latin-1")
    mr = load_splits(TASKS["mr"], tmp_path)["train"]
    assert mr.a == ("a fine film", "caf\xe9 good", "dull") and mr.y.tolist() == [1, 1, 0]
    write(se / "SUBJ" / "subj.objective", ["it rains"])
    write(se / "SUBJ" / "subj.subjective", ["i love it"])
    assert load_splits(TASKS["subj"], tmp_path)["train"].y.tolist() == [1, 0]  # objective is label 1, as SentEval
    for split in ("train", "dev", "test"):
        write(se / "SST" / "binary" / f"sentiment-{split}", ["good fun\t1", "bad\t0"])
    assert load_splits(TASKS["sst2"], tmp_path)["dev"].y.tolist() == [1, 0]
    write(se / "TREC" / "train_5500.label", ["LOC:city What is the capital ?", "NUM:date When did it end ?"], "latin-1")
    write(se / "TREC" / "TREC_10.label", ["HUM:ind Who won ?"], "latin-1")
    trec = load_splits(TASKS["trec"], tmp_path)
    assert trec["train"].a[0] == "What is the capital ?" and trec["train"].y.tolist() == [4, 5]
    assert trec["test"].y.tolist() == [3]
    mrpc_rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t1\t2\tA cat sat .\tA cat was sitting ."]
    write(se / "MRPC" / "msr_paraphrase_train.txt", mrpc_rows)
    write(se / "MRPC" / "msr_paraphrase_test.txt", mrpc_rows)
    mrpc = load_splits(TASKS["mrpc"], tmp_path)["test"]
    assert (mrpc.a, mrpc.b, mrpc.y.tolist()) == (("A cat sat .",), ("A cat was sitting .",), [1])
    # SICK from the shared data's own folder; the test split is optional
    for name in ("SICK_train.txt", "SICK_trial.txt"):
        write(tmp_path / "sick" / name, [SICK_HEADER, "1\tA man runs\tA person runs\t4.5\tENTAILMENT",
                                         "2\tA man runs\tNo man runs\t1.5\tCONTRADICTION"])
    sick = load_splits(TASKS["sick-e"], tmp_path)
    assert set(sick) == {"train", "dev"} and sick["dev"].y.tolist() == [2, 0]
    assert load_splits(TASKS["sickr-sup"], tmp_path)["train"].y.tolist() == [4.5, 1.5]
    write(tmp_path / "corpus" / "bbc" / "sport" / "001.txt", ["Chelsea win", "", "body \xa3"], "latin-1")
    write(tmp_path / "corpus" / "bbc" / "tech" / "001.txt", ["New phone", "", "body"])
    bbc = load_splits(TASKS["bbc-topics"], tmp_path)["train"]
    assert bbc.a == ("Chelsea win", "New phone") and bbc.y.tolist() == [0, 1]


@pytest.mark.parametrize(("task", "name", "lines", "line_no", "encoding"), [
    ("mr", "MR/rt-polarity.neg", ["ok", "   "], 2, "latin-1"),
    ("sst2", "SST/binary/sentiment-train", ["good\t1", "bad\tx"], 2, "utf-8"),
    ("trec", "TREC/train_5500.label", ["LOC:city Where ?", "WHAT:x Who ?"], 2, "latin-1"),
    ("trec", "TREC/train_5500.label", ["no colon here"], 1, "latin-1"),
    ("mrpc", "MRPC/msr_paraphrase_train.txt", ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t1\t2\tonly one"], 2,
     "utf-8"),
    ("sick-e", "SICK/SICK_train.txt", [SICK_HEADER, "1\ta\tb\t3.0\tMAYBE"], 2, "utf-8"),
    ("stsb-sup", "STS/STSBenchmark/sts-train.csv", ["g\tf\t2012\t1\t5.0\ta b", "g\tf\t2012\t2\t4.0\tc\td"], 1, "utf-8"),
])
def test_malformed_line_names_file_and_line(tmp_path, task, name, lines, line_no, encoding):
    good = {"mr": ["x"], "sst2": ["a\t1"], "trec": ["LOC:x Where ?"], "mrpc": [lines[0], "1\t1\t2\ta\tb"],
            "sick-e": [SICK_HEADER, "1\ta\tb\t3.0\tNEUTRAL"], "stsb-sup": ["g\tf\t2012\t1\t5.0\ta\tb"]}[task]
    folder = tmp_path / "senteval" / Path(name).parent
    for _, fname in TASKS[task].files:  # every other file well formed
        write(folder / fname, good, encoding)
    bad = write(tmp_path / "senteval" / name, lines, encoding)
    with pytest.raises(TransferFormatError, match=f"^{bad}:{line_no}: "):
        load_splits(TASKS[task], tmp_path)


def test_bbc_title_not_utf8_names_file(tmp_path):
    bad = tmp_path / "corpus" / "bbc" / "sport" / "001.txt"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\xa3 title\n\nbody\n")
    with pytest.raises(TransferFormatError, match=f"^{bad}:1: not valid utf-8"):
        load_splits(TASKS["bbc-topics"], tmp_path)


def test_missing_files_say_which_and_where(tmp_path):
    write(tmp_path / "downstream" / "MR" / "rt-polarity.pos", ["x"])
    with pytest.raises(TransferDataMissing) as err:
        locate(TASKS["mr"], tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("mr: missing rt-polarity.neg, rt-polarity.pos (looked in ")
    assert all(str(tmp_path / r / "MR") in msg for r in ("senteval", "downstream", "data/downstream"))
    assert available_tasks(tmp_path) == []
    write(tmp_path / "downstream" / "MR" / "rt-polarity.neg", ["y"])  # --data-dir at SentEval's data/
    assert locate(TASKS["mr"], tmp_path)["neg"] == tmp_path / "downstream" / "MR" / "rt-polarity.neg"
    assert available_tasks(tmp_path) == ["mr"]


# -- the protocol --------------------------------------------------------------------------------

def test_senteval_order_is_stable_length_then_label():
    split = Split(("b b", "a", "c c", "d"), np.array([1, 1, 0, 0]), "x")
    assert senteval_order(split).tolist() == [3, 1, 2, 0]
    pairs = Split(("a", "a", "a b"), np.array([1, 0, 0]), "x", b=("x y", "x", "x"))
    assert senteval_order(pairs).tolist() == [1, 0, 2]
    u, v = np.array([[1.0, 2.0]]), np.array([[3.0, -1.0]])
    assert features((u, v)).tolist() == [[2.0, 3.0, 3.0, -2.0]]


def test_encode_splits_encodes_each_distinct_sentence_once():
    calls = []

    def enc(texts):
        calls.append(list(texts))
        return bow(texts)

    splits = {"train": Split(("a b", "c"), np.array([0, 1]), "x", b=("c", "a b")), "dev": Split(("c",), np.array([1]), "y")}
    vecs, n = encode_splits(splits, enc)
    assert len(calls) == 1 and sorted(calls[0]) == ["a b", "c"] and n == 2
    np.testing.assert_array_equal(vecs["train"][1], bow(["c", "a b"]))


def test_split_classifier_chooses_c_on_dev_never_on_test():
    X, y = blobs(240, 3, sep=1.2)
    train, dev, test = (X[:120], y[:120]), (X[120:180], y[120:180]), (X[180:], y[180:])
    acc, test_acc, c, _ = split_classifier(train, dev, test, REGS, 1111)
    flipped = split_classifier(train, dev, (test[0], (test[1] + 1) % 3), REGS, 1111)
    assert (flipped[0], flipped[2]) == (acc, c) and flipped[1] != test_acc
    from sklearn.linear_model import LogisticRegression

    dev_scores = [round(100 * LogisticRegression(C=r, random_state=1111).fit(*train).score(*dev), 2) for r in REGS]
    assert c == REGS[int(np.argmax(dev_scores))] and acc == max(dev_scores)
    assert split_classifier(train, dev, None, REGS, 1111)[1] is None


def test_kfold_schemes_separable_and_shuffled():
    X, y = blobs(200, 2)
    dev, test, chosen = inner_kfold_classifier(X, y, REGS, 5, 1111)
    assert dev > 97 and test > 97 and len(chosen) == 5
    shuffled = np.random.default_rng(1).permutation(y)
    assert abs(inner_kfold_classifier(X, shuffled, REGS, 5, 1111)[1] - 50) < 12
    dev, test, c, yhat = kfold_classifier((X[:150], y[:150]), (X[150:], y[150:]), REGS, 5, 1111)
    assert dev > 97 and test > 97 and len(yhat) == 50 and c in REGS
    # the folds are SentEval's: StratifiedKFold(shuffle=True, random_state=seed), scored by sklearn's own loop
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    noisy = blobs(150, 2, sep=0.6, seed=3)
    cv = StratifiedKFold(5, shuffle=True, random_state=1111)
    ref = [round(100 * cross_val_score(LogisticRegression(C=r, random_state=1111), *noisy, cv=cv).mean(), 2) for r in REGS]
    assert kfold_classifier(noisy, noisy, REGS, 5, 1111)[0] == max(ref)
    assert abs(kfold_classifier((X[:150], shuffled[:150]), (X[150:], shuffled[150:]), REGS, 5, 1111)[1] - 50) < 16


def test_mr_and_trec_end_to_end_with_senteval_schemes(tmp_path):
    rng = np.random.default_rng(0)
    pos_words, neg_words, filler = ["great", "superb", "moving"], ["awful", "dull", "boring"], ["the", "film", "plot", "a"]

    def line(words):
        return " ".join([*rng.choice(filler, 3), *rng.choice(words, 2)])

    se = tmp_path / "senteval"
    write(se / "MR" / "rt-polarity.pos", [line(pos_words) for _ in range(30)], "latin-1")
    write(se / "MR" / "rt-polarity.neg", [line(neg_words) for _ in range(30)], "latin-1")
    mr = run_task("mr", tmp_path, bow)
    assert mr.scores["test_acc"] > 90 and len(mr.chosen_c) == 10 and mr.n == {"train": 60}  # 10 outer folds
    cue = {"ABBR": "stand", "DESC": "why", "ENTY": "which", "HUM": "who", "LOC": "where", "NUM": "many"}
    rows = [f"{lab}:x {cue[lab]} is {rng.choice(filler)} {rng.choice(filler)} ?" for lab in cue for _ in range(10)]
    write(se / "TREC" / "train_5500.label", rows, "latin-1")
    write(se / "TREC" / "TREC_10.label", [f"{lab}:x {cue[lab]} was it ?" for lab in cue], "latin-1")
    trec = run_task("trec", tmp_path, bow)
    assert trec.scores["test_acc"] == 100.0 and trec.chosen_c[0] in [2.0 ** t for t in range(-1, 6)]
    trec_shuffled_seed = run_task("trec", tmp_path, bow, seed=7)
    assert trec_shuffled_seed.protocol_hash != trec.protocol_hash


def test_protocol_hash_moves_with_every_setting():
    base = TASKS["sick-e"]
    hashes = {base.protocol_hash(), replace(base, grid=(-2, -1, 0)).protocol_hash(),
              replace(base, pairs=False).protocol_hash(), replace(base, seed=1).protocol_hash(),
              replace(base, scheme="kfold").protocol_hash(), replace(base, scheme="kfold", kfold=5).protocol_hash()}
    assert len(hashes) == 6 and replace(base).protocol_hash() == base.protocol_hash()
    assert TASKS["mr"].protocol_hash() != replace(TASKS["mr"], kfold=5).protocol_hash()
    assert TASKS["trec"].grid == (-1, 0, 1, 2, 3, 4, 5) and TASKS["sick-e"].grid == (-2, -1, 0, 1, 2, 3)
    assert [t for t in TASKS.values() if not t.paper] == [TASKS["bbc-topics"]]


def test_relatedness_probe_tai_targets_and_fit(monkeypatch):
    np.testing.assert_allclose(tai_targets(np.array([3.4, 5.0])), [[0, 0, 0.6, 0.4, 0], [0, 0, 0, 0, 1]], atol=1e-6)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(192, 6)).astype(np.float32)
    y = np.clip(3 + 1.5 * X[:, 0], 1, 5)
    data = {"train": (X[:128], y[:128]), "dev": (X[128:160], y[128:160]), "test": (X[160:], y[160:])}
    monkeypatch.setattr(transfer_regress, "CHECK_EVERY", 10)  # SentEval's 50 x up to 20 checks: seconds
    monkeypatch.setattr(transfer_regress, "MAX_EPOCH", 60)
    out = regress(TASKS["sickr-sup"], data)
    assert out["dev_pearson"] > 50 and out["test_pearson"] > 50 and set(out) == {"dev_pearson", "test_pearson",
                                                                                 "test_spearman"}


def test_seed_runs_encode_once_and_give_mean_and_sd(tmp_path):
    calls = []

    def enc(texts):
        calls.append(len(texts))
        return bow(texts)

    for topic, words in (("sport", "goal match win"), ("tech", "phone chip web")):
        for i in range(12):
            write(tmp_path / "corpus" / "bbc" / topic / f"{i:03d}.txt", [f"{words.split()[i % 3]} news {i}", "", "body"])
    fast = replace(TASKS["bbc-topics"], kfold=3)
    runs = run_task_seeds(fast, tmp_path, enc, [1, 2, 3])
    assert len(calls) == 1 and [r.protocol_hash for r in runs] == [replace(fast, seed=s).protocol_hash() for s in (1, 2, 3)]
    accs = [r.scores["test_acc"] for r in runs]
    mean, sd = seed_stats(runs)["test_acc"]
    assert mean == round(float(np.mean(accs)), 2) and sd == round(float(np.std(accs, ddof=1)), 2)
