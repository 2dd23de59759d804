"""The saved encoder is the evaluated one: SentenceTransformer(path) == defsentflow encode == the STS vectors."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from defsentflow.cli import main
from defsentflow.encoders import encode_texts, load_encoder
from defsentflow.evaluation.config import EvalConfig
from defsentflow.model.export import EVAL_MAX_LENGTH, save_encoder

# ~100 tokens each: longer than the training length (64), so truncation at 64 would show.
LONG = [" ".join(["the small dog walks to the house by the river and the green tree"] * 7),
        " ".join(["a young child reads a book of words in the dark room at night"] * 8),
        "a cat", "music sound song", *[f"the {w} is in the city" for w in ("king", "queen", "car", "bird", "fish")]]


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _saved(tiny_bert_dir, tmp_path, pooling="mean", normalize=None):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    return save_encoder(enc.model, enc.tokenizer, tmp_path / f"m-{pooling}", pooling=pooling, normalize=normalize,
                        meta={"base_model": str(tiny_bert_dir), "config": {"max_length": 64}})


def _check_same_vectors(path, pooling, tmp_path, home):
    from sentence_transformers import SentenceTransformer

    assert EvalConfig().max_length == EVAL_MAX_LENGTH  # the exported length is the evaluation's
    st = SentenceTransformer(str(path), device="cpu")
    evaluated = _unit(encode_texts(str(path), LONG, pooling=pooling, max_length=EvalConfig().max_length, device="cpu"))
    (tmp_path / "in.txt").write_text("\n".join(LONG) + "\n")
    assert main(["encode", str(path), "--input", str(tmp_path / "in.txt"), "--out", str(tmp_path / "v.parquet"),
                 "--device", "cpu"]) == 0
    cli = _unit(np.stack(pq.read_table(tmp_path / "v.parquet").column("embedding").to_numpy(zero_copy_only=False)))
    np.testing.assert_allclose(cli, evaluated, atol=1e-5)
    for bs in (1, 8):
        vecs = _unit(st.encode(LONG, batch_size=bs, convert_to_numpy=True))
        np.testing.assert_allclose(vecs, evaluated, atol=1e-5)
    return st


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_saved_model_encodes_as_evaluated(tiny_bert_dir, tmp_path, home, pooling):
    path = _saved(tiny_bert_dir, tmp_path, pooling)
    st = _check_same_vectors(path, pooling, tmp_path, home)
    assert st.max_seq_length == 128  # the evaluation's 256, capped by the tiny model's 128 positions
    assert st.similarity_fn_name == "cosine"
    assert (path / "config_sentence_transformers.json").is_file()
    assert [type(m).__name__ for m in st] == ["Transformer", "Pooling"]  # the tiny base has no Normalize
    assert oct((path / "model.safetensors").stat().st_mode & 0o777) == "0o644"
    card = (path / "README.md").read_text()  # a card from training time, figures come with `export model`
    assert card.startswith("---\nbase_model: ") and "library_name: sentence-transformers" in card
    assert str(tiny_bert_dir) not in card and "defsentflow export model" in card


def test_normalize_is_kept(tiny_bert_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(_saved(tiny_bert_dir, tmp_path, "mean", normalize=True)), device="cpu")
    assert type(list(st)[-1]).__name__ == "Normalize"
    assert np.allclose(np.linalg.norm(st.encode(LONG[:3]), axis=1), 1.0, atol=1e-5)


def test_prompt_pooling_refuses_instead_of_mean(tiny_bert_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    path = _saved(tiny_bert_dir, tmp_path, "prompt")
    assert "UnsupportedPooling" in (path / "modules.json").read_text()
    with pytest.raises(Exception):  # noqa: B017 - whatever sentence-transformers raises for an unknown module
        SentenceTransformer(str(path), device="cpu")
    with pytest.raises(ValueError, match="pooling 'prompt' has no sentence-transformers module"):
        SentenceTransformer(str(path), device="cpu", trust_remote_code=True)


@pytest.mark.slow
def test_minilm_trained_layout_keeps_normalize_and_length(minilm_dir, tmp_path, home):
    enc = load_encoder(minilm_dir, device="cpu")
    path = save_encoder(enc.model, enc.tokenizer, tmp_path / "mini", pooling="mean",
                        meta={"base_model": str(minilm_dir)})
    st = _check_same_vectors(path, "mean", tmp_path, home)
    assert st.max_seq_length == 256 and type(list(st)[-1]).__name__ == "Normalize"
    assert json.loads((path / "defsentflow.json").read_text())["normalize"] is True
