"""Masked-LM pretraining: masking, the loss, learning, the saved layouts, exact resume, the cached stage."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from defsentflow.config import load_pretrain_section
from defsentflow.training.checkpoint import CHECKPOINT_NAME
from defsentflow.training.pretrain import (
    build_mlm_model,
    gather_texts,
    mask_batch,
    mlm_loss,
    pretrain_mlm,
    run_pretrain,
)
from defsentflow.training.pretrain_config import PretrainSection

SENTENCES = [
    "the cat is a small animal that lives in the house",
    "the dog is a large animal that can run fast",
    "a king is a man who is the ruler of a country",
    "a queen is a woman who is the ruler of a country",
    "the sun is the light of the day",
    "fish live in the river and the sea",
    "a bird can fly with a wing",
    "we read the words of a book",
    "an apple is a red round fruit",
    "the children play a game with a ball",
]


def _tiny(**kw) -> PretrainSection:
    """A tiny section for :func:`pretrain_mlm` (which reads its architecture and optimisation, not its corpora)."""
    arch = dict(hidden=32, layers=2, heads=2, intermediate=64, max_length=32, max_position_embeddings=64)
    base = dict(batch_size=4, lr=3e-3, warmup_steps=3, epochs=8, mask_prob=0.3, device="cpu", checkpoint_every=4, seed=3)
    return PretrainSection(corpora=[{"name": "unused"}], architecture={**arch, **{k: kw.pop(k) for k in list(kw) if k in arch}},
                           **{**base, **kw})


def _tokenizer(path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def test_masking_is_80_10_10_and_never_touches_special_tokens(tiny_mlm_dir):
    from transformers import DataCollatorForLanguageModeling

    tok = _tokenizer(tiny_mlm_dir)
    special = torch.as_tensor(sorted(set(tok.all_special_ids)))
    normal = np.array([i for i in range(len(tok)) if i not in set(special.tolist())])
    rng = np.random.default_rng(0)
    seqs = [[tok.cls_token_id, *rng.choice(normal, size=int(rng.integers(20, 60))).tolist(), tok.sep_token_id]
            for _ in range(400)]
    masker = DataCollatorForLanguageModeling(tokenizer=tok, mlm_probability=0.15)
    torch.manual_seed(0)
    batch = mask_batch(masker, seqs, tok.pad_token_id, special, torch.device("cpu"))
    orig = torch.full_like(batch["input_ids"], tok.pad_token_id)
    for i, s in enumerate(seqs):
        orig[i, : len(s)] = torch.as_tensor(s)
    masked = batch["labels"] != -100
    is_special = torch.isin(orig, special)
    assert not masked[is_special].any()  # [CLS], [SEP] and padding are never chosen
    assert torch.equal(batch["labels"][masked], orig[masked])  # labels are the original tokens
    assert torch.equal(batch["input_ids"][~masked], orig[~masked])  # nothing else changes
    assert torch.equal(batch["attention_mask"].bool(), orig != tok.pad_token_id)
    n = int(masked.sum())
    candidates = int((~is_special).sum())
    assert abs(n / candidates - 0.15) < 0.01
    to_mask = (batch["input_ids"][masked] == tok.mask_token_id).float().mean().item()
    kept = (batch["input_ids"][masked] == orig[masked]).float().mean().item()
    assert abs(to_mask - 0.8) < 0.03 and abs(kept - 0.1) < 0.025  # the rest: random tokens


def test_loss_at_masked_positions_equals_the_full_mlm_loss(tiny_mlm_dir):
    tok = _tokenizer(tiny_mlm_dir)
    torch.manual_seed(0)
    model = build_mlm_model(_tiny(), tok).eval()
    special = torch.as_tensor(sorted(set(tok.all_special_ids)))
    from transformers import DataCollatorForLanguageModeling

    ids = tok(SENTENCES, truncation=True, max_length=32)["input_ids"]
    batch = mask_batch(DataCollatorForLanguageModeling(tokenizer=tok, mlm_probability=0.3), ids, tok.pad_token_id,
                       special, torch.device("cpu"))
    with torch.no_grad():
        ours = mlm_loss(model, batch)
        reference = model(**batch).loss  # transformers: the head over every position, -100 ignored
    assert torch.allclose(ours, reference, atol=1e-5)
    none = {**batch, "labels": torch.full_like(batch["labels"], -100)}
    zero = mlm_loss(model, none)
    assert float(zero.detach()) == 0.0 and zero.requires_grad


def _fixed_batch_loss(model_dir: Path, tok) -> float:
    """MLM loss of a saved model on one fixed masking of the training sentences."""
    from transformers import AutoModelForMaskedLM, DataCollatorForLanguageModeling

    model = AutoModelForMaskedLM.from_pretrained(str(model_dir)).eval()
    ids = tok(SENTENCES, truncation=True, max_length=32)["input_ids"]
    masker = DataCollatorForLanguageModeling(tokenizer=tok, mlm_probability=0.3, seed=11)
    special = torch.as_tensor(sorted(set(tok.all_special_ids)))
    batch = mask_batch(masker, ids, tok.pad_token_id, special, torch.device("cpu"))
    with torch.no_grad():
        return float(model(**batch).loss)


def test_pretraining_learns_and_saves_every_layout(tiny_mlm_dir, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoModelForMaskedLM

    from defsentflow.encoders import has_mlm_head

    tok = _tokenizer(tiny_mlm_dir)
    cfg = _tiny()
    untrained = tmp_path / "untrained"
    torch.manual_seed(cfg.seed)
    build_mlm_model(cfg, tok).save_pretrained(untrained)
    res = pretrain_mlm(cfg, SENTENCES * 2, str(tiny_mlm_dir), out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck")
    assert res.completed and res.steps == res.total_steps == 8 * 5
    assert res.final_loss < res.first_loss - 0.5
    assert not (tmp_path / "ck" / CHECKPOINT_NAME).exists()
    # The saved MLM head is the trained one: the loss on a fixed masking fell.
    assert _fixed_batch_loss(tmp_path / "m", tok) < _fixed_batch_loss(untrained, tok) - 0.5

    out = tmp_path / "m"
    assert has_mlm_head(str(out))
    weights = load_file(str(out / "model.safetensors"))
    assert any(k.startswith("cls.predictions") for k in weights)
    mlm = AutoModelForMaskedLM.from_pretrained(str(out))
    base = AutoModel.from_pretrained(str(out))  # an MLM checkpoint loads as its base model
    for name, p in base.named_parameters():
        if not name.startswith("pooler."):
            assert torch.equal(p, weights[f"bert.{name}"]), name
    assert torch.equal(mlm.bert.embeddings.word_embeddings.weight, base.embeddings.word_embeddings.weight)
    # sentence-transformers: mean pooling over the base model's token vectors.
    st = SentenceTransformer(str(out), device="cpu")
    vec = st.encode(SENTENCES[:3], convert_to_numpy=True)
    enc = tok(SENTENCES[:3], padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = base.eval()(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    np.testing.assert_allclose(vec, ((hidden * m).sum(1) / m.sum(1)).numpy(), atol=1e-5)
    meta = json.loads((out / "defsentflow.json").read_text())
    assert meta["method"] == "pretrain" and meta["pooling"] == "mean" and len(meta["losses"]) == res.steps


def test_killed_pretraining_resumes_to_identical_weights(tiny_mlm_dir, tmp_path):
    cfg = _tiny(epochs=2, checkpoint_every=3)  # 5 batches per epoch; dropout, masking, warm-up: all state matters
    texts = SENTENCES * 2
    full = pretrain_mlm(cfg, texts, str(tiny_mlm_dir), out_dir=tmp_path / "full", checkpoint_dir=tmp_path / "ck-full")
    first = pretrain_mlm(cfg, texts, str(tiny_mlm_dir), out_dir=tmp_path / "res", checkpoint_dir=tmp_path / "ck",
                         stop_after_steps=4)
    assert first.steps == 4 and not first.completed and not (tmp_path / "res").exists()
    assert [p.name for p in (tmp_path / "ck").iterdir()] == [CHECKPOINT_NAME]
    second = pretrain_mlm(cfg, texts, str(tiny_mlm_dir), out_dir=tmp_path / "res", checkpoint_dir=tmp_path / "ck",
                          stop_after_steps=7)  # mid-epoch 2
    assert second.resumed_from == 4 and second.steps == 7 and not second.completed
    done = pretrain_mlm(cfg, texts, str(tiny_mlm_dir), out_dir=tmp_path / "res", checkpoint_dir=tmp_path / "ck")
    assert done.completed and done.resumed_from == 7 and done.losses == full.losses
    a, b = load_file(str(tmp_path / "full" / "model.safetensors")), load_file(str(tmp_path / "res" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # A different run must not pick up another run's checkpoint.
    pretrain_mlm(cfg, texts, str(tiny_mlm_dir), out_dir=tmp_path / "x", checkpoint_dir=tmp_path / "ck2", stop_after_steps=2)
    with pytest.raises(ValueError, match="another run"):
        pretrain_mlm(_tiny(epochs=2, lr=1e-3), texts, str(tiny_mlm_dir), out_dir=tmp_path / "x",
                     checkpoint_dir=tmp_path / "ck2")


def test_max_steps_caps_the_run_and_the_schedule(tiny_mlm_dir, tmp_path):
    res = pretrain_mlm(_tiny(epochs=5, max_steps=7, warmup_steps=2), SENTENCES * 2, str(tiny_mlm_dir),
                       out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck")
    assert res.completed and res.steps == res.total_steps == 7


def _write_corpus(tmp_path: Path, title: str = "Animals and people") -> Path:
    """A one-document corpus: a title, then the sentences two to a paragraph."""
    src = tmp_path / "corpus"
    src.mkdir(exist_ok=True)
    sentences = [s[0].upper() + s[1:] + "." for s in SENTENCES]
    paragraphs = [" ".join(sentences[i:i + 2]) for i in range(0, len(sentences), 2)]
    (src / "a.txt").write_text(title + "\n\n" + "\n\n".join(paragraphs) + "\n")
    return src


def _toy_dictionary(tmp_path: Path) -> None:
    from defsentflow.dictionary import ingest_dictionary
    from defsentflow.dictionary.config import DictionaryConfig

    rows = [
        {"entry": "cat", "definition": "a small animal that is kept at home", "examples": ["the cat can run fast"]},
        {"entry": "dog", "definition": "an animal that lives with people", "examples": ["the dog can play a game"]},
        {"entry": "sun", "definition": "the light of the day in the sky", "examples": ["the sun is green"]},
        {"entry": "tree", "definition": "a large green plant", "examples": ["a bird in the tree"]},
        {"entry": "book", "definition": "pages of words to read"},
    ]
    src = tmp_path / "toy.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ingest_dictionary(DictionaryConfig(name="toy", sources=[{"kind": "jsonl", "paths": [str(src)]}], ratios=(0.6, 0.2, 0.2)))


def _section(tmp_path: Path, tokenizer: Path, **kw) -> PretrainSection:
    base = dict(name="tiny", corpora=[{"name": "toycorpus", "paths": [str(tmp_path / "corpus")]}], dictionary="toy",
                architecture={"hidden": 32, "layers": 2, "heads": 2, "intermediate": 64, "max_length": 32,
                              "max_position_embeddings": 64},
                tokenizer=str(tokenizer), batch_size=4, lr=3e-3, warmup_steps=2, epochs=2, device="cpu",
                checkpoint_every=3)
    return PretrainSection.model_validate({**base, **kw})


def test_text_is_corpus_sentences_and_usage_examples_never_glosses(home, tmp_path):
    from defsentflow.corpus import ingest_corpus
    from defsentflow.dictionary import load_dictionary, load_examples

    _write_corpus(tmp_path)
    _toy_dictionary(tmp_path)
    key = ingest_corpus([tmp_path / "corpus"], "toycorpus").key
    data = gather_texts([key], "toy")
    glosses = set(load_dictionary("toy").column("definition").to_pylist())
    examples = load_examples("toy").column("example").to_pylist()
    assert not glosses & set(data.texts)
    assert set(examples) <= set(data.texts)
    assert len(data.texts) == len(set(data.texts)) and data.counts["examples:toy"] == len(set(examples))
    twice = gather_texts([key, key], None)
    assert twice.texts == gather_texts([key], None).texts and twice.duplicates == len(twice.texts)
    train_only = gather_texts([key], "toy", ["train"])
    n_train = load_examples("toy", "train").num_rows
    assert train_only.counts["examples:toy"] == n_train


def test_run_pretrain_registers_and_a_rerun_is_a_cache_hit(home, tmp_path, tiny_mlm_dir, monkeypatch):
    import defsentflow.training.pretrain as pretrain
    from defsentflow.encoders import has_mlm_head
    from defsentflow.storage import Catalog

    _write_corpus(tmp_path)
    _toy_dictionary(tmp_path)
    section = _section(tmp_path, tiny_mlm_dir)
    stopped = run_pretrain(section, run_id="r0", stop_after_steps=2)
    assert not stopped.completed and stopped.steps == 2 and stopped.model_dir == ""
    first = run_pretrain(section, run_id="r1")  # resumes the checkpoint
    assert first.completed and not first.cached and first.steps == first.total_steps
    out = Path(first.model_dir)
    assert out == home.resolve() / "models" / "pretrain" / first.key and has_mlm_head(str(out))
    assert not (home / "checkpoints" / "pretrain" / first.key).exists()
    cat = Catalog()
    model = cat.query("SELECT * FROM models WHERE model_id = ?", [first.model_id])[0]
    assert model["method"] == "pretrain" and model["artifact_key"] == first.key and model["path"] == str(out)
    assert cat.artifact(first.key)["kind"] == "model"
    assert {r["status"] for r in cat.query("SELECT status FROM runs WHERE run_id IN ('r0', 'r1')")} == {"stopped", "completed"}

    def forbidden(*a, **kw):
        raise AssertionError("a cached run must not train")

    monkeypatch.setattr(pretrain, "pretrain_mlm", forbidden)
    again = run_pretrain(section, run_id="r2")
    assert again.cached and again.key == first.key and again.model_dir == first.model_dir
    assert again.final_loss == pytest.approx(first.final_loss)
    # Any change to the data or the config is a new model.
    changed = _section(tmp_path, tiny_mlm_dir, lr=1e-3)
    with pytest.raises(AssertionError, match="must not train"):
        run_pretrain(changed)


def test_section_validation_and_the_raw_tiny_config(tmp_path):
    from defsentflow.storage.paths import repo_root

    s = load_pretrain_section(repo_root() / "configs" / "raw-tiny.yaml")
    a = s.architecture
    assert (a.hidden, a.layers, a.heads, a.intermediate, a.max_length) == (256, 4, 4, 1024, 64)
    assert (s.batch_size, s.lr, s.warmup_steps, s.mask_prob, s.epochs) == (128, 5e-4, 200, 0.15, 1)
    assert s.tokenizer == "minilm" and s.dictionary == "oewn" and [c.name for c in s.corpora] == ["bbc", "gutenberg"]

    bad = tmp_path / "bad.yaml"
    bad.write_text("pretrain:\n  corpora: [{name: bbc}]\n  batchsize: 3\n")
    with pytest.raises(ValueError, match=r"bad.yaml.*pretrain.batchsize"):
        load_pretrain_section(bad)
    bad.write_text("pretrain:\n  corpora: [{name: bbc}]\n  architecture: {hidden: 30, heads: 4}\n")
    with pytest.raises(ValueError, match="multiple of heads"):
        load_pretrain_section(bad)
    bad.write_text("name: x\n")
    with pytest.raises(ValueError, match="no 'pretrain:' section"):
        load_pretrain_section(bad)


def test_cli_pretrain(home, tmp_path, tiny_mlm_dir, capsys):
    import yaml

    from defsentflow.cli import main

    _write_corpus(tmp_path)
    cfg = tmp_path / "c.yaml"
    section = _section(tmp_path, tiny_mlm_dir, dictionary=None).model_dump(mode="json")
    cfg.write_text(yaml.safe_dump({"name": "x", "pretrain": section}))
    assert main(["--quiet", "pretrain", str(cfg), "--stop-after-steps", "2"]) == 0
    assert "stopped at step 2/" in capsys.readouterr().out
    assert main(["--quiet", "pretrain", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "corpus:toycorpus" in out and "tiny-" in out and "steps, loss" in out
    assert main(["--quiet", "pretrain", str(cfg)]) == 0
    assert "(cached)" in capsys.readouterr().out
    missing = tmp_path / "m.yaml"
    missing.write_text(yaml.safe_dump({"pretrain": {**section, "dictionary": "nope"}}))
    assert main(["--quiet", "pretrain", str(missing)]) == 2
    assert "nope" in capsys.readouterr().err
    gone = tmp_path / "g.yaml"
    gone.write_text(yaml.safe_dump({"pretrain": {**section, "corpora": [{"name": "g", "paths": [str(tmp_path / "gone")]}]}}))
    assert main(["--quiet", "pretrain", str(gone)]) == 2
    assert "gone" in capsys.readouterr().err
    assert len(list((home / "models" / "pretrain").iterdir())) == 1  # only the one finished model


def test_pretraining_warms_up_over_exactly_its_warmup_steps():
    """W = warmup_steps: steps 0..W-1 rise from rate 0, step W is the first at the full rate (the old
    +0.5 put it at W / (W + 0.5)), then linear decay to 0 at the last step."""
    from defsentflow.training.loop import linear_schedule
    from defsentflow.training.pretrain import warmup_ratio

    f = linear_schedule(300, warmup_ratio(30, 300), decay=True)
    assert f(0) == 0.0 and f(29) == pytest.approx(29 / 30) and f(30) == 1.0
    assert f(31) == pytest.approx(269 / 270) and f(299) == pytest.approx(1 / 270)
    assert warmup_ratio(0, 300) == 0.0 and warmup_ratio(500, 300) == 1.0


def test_the_ci_configs_share_one_raw_encoder():
    """configs/raw-ci.yaml (the controls, the claims) and raw-ci-defsent.yaml pretrain the same encoder
    (one cached artifact): their pretrain sections must stay equal."""
    import yaml

    configs = Path(__file__).resolve().parents[2] / "configs"
    sections = [yaml.safe_load((configs / f).read_text())["pretrain"] for f in ("raw-ci.yaml", "raw-ci-defsent.yaml")]
    assert sections[0] == sections[1]
