from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from defsentflow.scoring.config import SurrogateSection
from defsentflow.training.surrogate import build_surrogate_model, load_pair_dataset, train_surrogate

PAIRS = [
    ("the cat is a small animal", "a small cat", 0.9),
    ("the dog is a big animal", "a large dog", 0.85),
    ("water is a clear liquid", "the river water is clear", 0.8),
    ("the king is a ruler", "a queen rules a country", 0.7),
    ("the cat is a small animal", "the road is long", 0.1),
    ("people read a book", "fish live in the sea", 0.05),
    ("children play a game", "the sun light of day", 0.0),
    ("red apple fruit", "sweet round fruit", 0.75),
]


@pytest.fixture()
def pairs_file(tmp_path):
    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"s1": [a for a, _, _ in PAIRS], "s2": [b for _, b, _ in PAIRS],
                             "score": pa.array([s for _, _, s in PAIRS], pa.float32())}), path)
    return path


def _mse(model, pairs):
    a = model.encode([p[0] for p in pairs], convert_to_numpy=True)
    b = model.encode([p[1] for p in pairs], convert_to_numpy=True)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float(np.mean((cos - np.array([p[2] for p in pairs])) ** 2))


def test_trains_and_reloads_with_mean_pooling(tiny_bert_dir, pairs_file, tmp_path):
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoModel, AutoTokenizer

    cfg = SurrogateSection(base_encoder=str(tiny_bert_dir), epochs=8, batch_size=4, lr=1e-3, warmup_ratio=0.0,
                          save_steps=1000, device="cpu")
    before = _mse(build_surrogate_model(str(tiny_bert_dir), device="cpu"), PAIRS)
    res = train_surrogate(pairs_file, tmp_path / "model", cfg)
    assert res.steps == 8 * 2 and res.n_pairs == len(PAIRS) and res.resumed_from is None
    assert not (tmp_path / "model.checkpoints").exists()

    model = SentenceTransformer(str(res.path), device="cpu")
    pools = [m for m in model if isinstance(m, models.Pooling)]
    assert len(pools) == 1 and pools[0].get_config_dict()["pooling_mode"] in ("mean", ["mean"])
    assert _mse(model, PAIRS) < before  # the cosine moved towards the labels

    # the saved encoder is mean pooling over the backbone's last layer
    tok = AutoTokenizer.from_pretrained(res.path)
    backbone = AutoModel.from_pretrained(res.path).eval()
    texts = ["the cat is a small animal", "a river"]
    batch = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = backbone(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    np.testing.assert_allclose(model.encode(texts), expected, rtol=1e-4, atol=1e-5)


def test_resumes_from_the_last_checkpoint(tiny_bert_dir, pairs_file, tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformerTrainer

    cfg = SurrogateSection(base_encoder=str(tiny_bert_dir), epochs=3, batch_size=4, lr=1e-3, save_steps=2, device="cpu")
    work = tmp_path / "ckpt"
    original = SentenceTransformerTrainer.training_step
    calls = {"n": 0}

    def dying_step(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 4:  # after checkpoint-2, in the middle of the run
            raise RuntimeError("killed")
        return original(self, *a, **k)

    monkeypatch.setattr(SentenceTransformerTrainer, "training_step", dying_step)
    with pytest.raises(RuntimeError, match="killed"):
        train_surrogate(pairs_file, tmp_path / "model", cfg, work_dir=work)
    assert not (tmp_path / "model").exists()
    assert (work / "checkpoint-2").is_dir()

    calls["n"] = -100  # no more crashes
    res = train_surrogate(pairs_file, tmp_path / "model", cfg, work_dir=work)
    assert res.resumed_from is not None and res.resumed_from.endswith("checkpoint-2")
    assert res.steps == 3 * 2
    assert calls["n"] == -100 + (6 - 2)  # only the steps after the checkpoint ran again


def test_pair_dataset_subset_and_errors(pairs_file, tmp_path):
    ds = load_pair_dataset(pairs_file, max_pairs=3, seed=1)
    assert ds.column_names == ["sentence1", "sentence2", "score"] and len(ds) == 3
    assert ds["sentence1"] == load_pair_dataset(pairs_file, max_pairs=3, seed=1)["sentence1"]
    with pytest.raises(FileNotFoundError):
        load_pair_dataset(tmp_path / "nope.parquet")
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"s1": ["a"], "s2": ["b"], "score": pa.array([float("nan")], pa.float32())}), bad)
    with pytest.raises(ValueError, match="row 0"):
        load_pair_dataset(bad)


def test_label_scalings_and_the_shuffled_control(pairs_file):
    from defsentflow.training.surrogate import scale_labels

    raw = np.array([s for _, _, s in PAIRS], dtype=np.float32)
    np.testing.assert_allclose(scale_labels(raw, "none"), raw)
    mm = scale_labels(raw, "minmax")
    assert mm.min() == 0.0 and mm.max() == 1.0 and np.array_equal(np.argsort(mm), np.argsort(raw))
    assert scale_labels(np.array([0.1, 0.5, 0.3, 0.3]), "rank").tolist() == [0.0, 1.0, 0.5, 0.5]
    assert scale_labels(np.array([0.2, 0.2]), "minmax").tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match="label scaling"):
        scale_labels(raw, "zscore")

    ds = load_pair_dataset(pairs_file, labels="rank")
    assert sorted(ds["score"]) == pytest.approx(sorted(scale_labels(raw, "rank")))
    shuffled = load_pair_dataset(pairs_file, shuffle_labels=True)
    assert shuffled["sentence1"] == [a for a, _, _ in PAIRS]  # the pairs stay, their labels move
    assert sorted(shuffled["score"]) == pytest.approx(sorted(raw.tolist())) and shuffled["score"] != raw.tolist()
    assert shuffled["score"] == load_pair_dataset(pairs_file, shuffle_labels=True)["score"]  # seeded


@pytest.mark.parametrize("loss", ["cosent", "angle"])
def test_ranking_losses_train(tiny_bert_dir, pairs_file, tmp_path, loss):
    cfg = SurrogateSection(base_encoder=str(tiny_bert_dir), epochs=2, batch_size=4, lr=1e-3, save_steps=1000,
                          device="cpu", loss=loss, labels="rank")
    res = train_surrogate(pairs_file, tmp_path / "model", cfg)
    assert res.steps == 4 and res.train_loss is not None and np.isfinite(res.train_loss)
    with pytest.raises(ValueError, match="loss"):
        SurrogateSection(loss="mse")
    with pytest.raises(ValueError, match="labels"):
        SurrogateSection(labels="zscore")


def test_the_supervised_step_fine_tunes_on_gold_scores_divided_by_five(tiny_bert_dir, tmp_path):
    """Sun et al.'s supervised row: the trained surrogate (here the tiny BERT stands in) fine-tuned on STS-B-format
    gold pairs with CosineSimilarityLoss on score / 5; registered beside the surrogate, cached on a re-run."""
    from types import SimpleNamespace

    from defsentflow.scoring.config import SupervisedSection
    from defsentflow.storage import Catalog
    from defsentflow.training.surrogate import run_supervised

    gold = tmp_path / "sts-train.csv"
    gold.write_text("".join(f"main-captions\tMSRvid\t2012\t{i:04d}\t{5 * s:.2f}\t{a}\t{b}\n"
                            for i, (a, b, s) in enumerate(PAIRS)))
    sup = SupervisedSection(file=str(gold), epochs=4, batch_size=8, lr=1e-3, warmup_ratio=0.0)
    cfg = SimpleNamespace(root=str(tmp_path / "home"), surrogate=SurrogateSection(
        base_encoder=str(tiny_bert_dir), name="surrogate-toy", device="cpu", save_steps=1000, supervised=sup))
    before = _mse(build_surrogate_model(str(tiny_bert_dir), device="cpu"), PAIRS)
    res = run_supervised(cfg, {"key": "k-surrogate", "path": str(tiny_bert_dir), "model_id": "surrogate-toy-k"})
    assert res["model_id"].startswith("surrogate-toy-supervised") and res["n_pairs"] == len(PAIRS) and res["steps"] == 4
    from sentence_transformers import SentenceTransformer

    assert _mse(SentenceTransformer(res["path"], device="cpu"), PAIRS) < before  # towards the gold scores / 5
    assert Catalog(cfg.root).artifact(res["key"]) is not None
    assert run_supervised(cfg, {"key": "k-surrogate", "path": str(tiny_bert_dir), "model_id": "x"})["cached"] is True
    gold.write_text(gold.read_text() + "main-captions\tMSRvid\t2012\t9999\tn/a\ta b\tc d\n")
    from defsentflow.scoring.pair_file import read_scored_pairs

    with pytest.raises(ValueError, match=r"sts-train.csv: line 9: score 'n/a' is not a number"):
        read_scored_pairs(gold)
