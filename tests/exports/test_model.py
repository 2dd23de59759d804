"""`defsentflow export model`: the evaluated encoder with a card, no absolute paths, readable weights."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from defsentflow.cli import main
from defsentflow.encoders import encode_texts, load_encoder
from defsentflow.model.export import save_encoder
from defsentflow.storage import Catalog

TEXTS = [" ".join(["the small dog walks to the house by the river"] * 9), "a cat", "a song in the night"]


def _trained(tiny_bert_dir, home, pooling="mean"):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    path = save_encoder(enc.model, enc.tokenizer, home / "models" / f"m-{pooling}", pooling=pooling, normalize=True,
                        meta={"method": "defsent_plus", "base_model": str(tiny_bert_dir), "entry": str(home / "em.npy"),
                              "config": {"lr": 2e-5, "epochs": 1, "max_length": 64}, "losses": [1.0, 0.5]})
    cat = Catalog()
    cat.register_model(f"pst-{pooling}", path, base_model=str(tiny_bert_dir), method="pst", pooling=pooling, run_id="r1")
    cat.record_metrics(f"pst-{pooling}", [
        {"task": "stsb-dev", "setting": "all", "metric": "spearman", "value": 61.5, "n": 10, "pooling": pooling},
        {"task": "sts12", "setting": "all", "metric": "spearman", "value": 55.25, "n": 10, "pooling": pooling},
        {"task": "revdict-dev", "setting": "head", "metric": "mrr", "value": 0.125, "n": 10, "pooling": pooling},
        {"task": "revdict-dev", "setting": "head", "metric": "n_tied", "value": 3.0, "n": 10, "pooling": pooling}])
    return path


def test_export_model_has_card_st_files_and_no_absolute_paths(tiny_bert_dir, home, tmp_path, capsys):
    from sentence_transformers import SentenceTransformer

    src = _trained(tiny_bert_dir, home)
    out = tmp_path / "exported"
    assert main(["export", "model", "pst-mean", str(out)]) == 0
    st = SentenceTransformer(str(out), device="cpu")
    ref = encode_texts(str(src), TEXTS, pooling="mean", max_length=256, device="cpu", normalize=True)
    for bs in (1, 8):
        np.testing.assert_allclose(st.encode(TEXTS, batch_size=bs), ref, atol=1e-5)
    assert st.max_seq_length == 128 and type(list(st)[-1]).__name__ == "Normalize"
    card = (out / "README.md").read_text()
    head = yaml.safe_load(card.split("---")[1])
    assert head["library_name"] == "sentence-transformers" and head["pipeline_tag"] == "sentence-similarity"
    assert {"base_model", "tags"} <= set(head) and "datasets" not in head  # no Hub dataset to name
    assert "| stsb-dev | dev (selection) |" in card and "61.50" in card and "revdict unseen queries, head mode" in card
    assert "SentenceTransformer(" in card and "## Licences" in card
    (index,) = head["model-index"]  # the measured figures, as the Hub reads them
    values = {(r["task"]["type"], r["dataset"]["split"], m["type"]): m["value"]
              for r in index["results"] for m in r["metrics"]}
    assert index["name"] == "pst-mean" and values == {("sentence-similarity", "validation", "spearman"): 61.5,
                                                      ("sentence-similarity", "test", "spearman"): 55.25,
                                                      ("text-retrieval", "validation", "mrr"): 0.125}
    assert head["license"] == "other" and "## Limitations" in card  # the tiny base model has no card of its own
    assert "@inproceedings{tsukagoshi-etal-2021-defsent" in card and "@misc{liu-2024-defsentplus" in card
    assert 'doi = "10.18653/v1/2021.acl-short.52"' in card and 'eprint = "2405.16153"' in card  # full citations
    assert "n_tied" not in card  # a count, not a figure
    # `defsentflow encode` gives the exported model's vectors by default (the same normalisation)
    (tmp_path / "s.txt").write_text("\n".join(TEXTS) + "\n")
    assert main(["encode", "pst-mean", "--input", str(tmp_path / "s.txt"), "--out", str(tmp_path / "v.parquet")]) == 0
    encoded = np.array(pq.read_table(tmp_path / "v.parquet").column("embedding").to_pylist())
    np.testing.assert_allclose(encoded, st.encode(TEXTS, batch_size=8), atol=1e-5)
    for f in out.rglob("*"):
        if f.is_file():
            assert oct(f.stat().st_mode & 0o777) == "0o644", f
            if f.suffix in (".json", ".md", ".txt"):
                text = f.read_text()
                for absolute in (str(home), str(tmp_path), str(tiny_bert_dir)):
                    assert absolute not in text, (f.name, absolute)
    assert main(["export", "model", str(src), str(tmp_path / "by-path")]) == 0  # the folder best-model prints
    assert "61.50" in (tmp_path / "by-path" / "README.md").read_text()
    meta = json.loads((out / "defsentflow.json").read_text())
    assert meta["entry"] == "em.npy" and "losses" not in meta and meta["max_seq_length"] == 128


def test_the_card_leads_with_three_headline_figures_beside_the_untrained_model(tiny_bert_dir, home, tmp_path):
    from defsentflow.model.ids import base_model_id

    _trained(tiny_bert_dir, home)
    m = lambda task, setting, metric, value: {"task": task, "setting": setting, "metric": metric,  # noqa: E731
                                               "value": value, "n": 10, "pooling": "mean"}
    Catalog().record_metrics("pst-mean", [m("sickr", "all", "spearman", 70.0), m("revdict", "head", "mrr", 0.2),
                                          m("revdict", "cosine", "mrr", 0.3), m("revdict-dev", "cosine", "mrr", 0.1)])
    Catalog().record_metrics(base_model_id(str(tiny_bert_dir)), [m("stsb-dev", "all", "spearman", 60.0),
                                                                     m("revdict", "head", "mrr", 0.01)])
    assert main(["export", "model", "pst-mean", str(tmp_path / "out")]) == 0
    card = (tmp_path / "out" / "README.md").read_text()
    headline = card[card.index("### Headline"):card.index("### Every figure")].strip().splitlines()[4:]
    assert [row.split(" | ")[0].lstrip("| ") for row in headline] == [
        "STS-B dev, all pairs", "sickr, all pairs (Spearman x100)", "revdict unseen queries, head mode"]  # dev-best mode
    assert headline[0].endswith("| 61.50 | 60.00 | +1.50 |") and headline[2].endswith("| 0.2000 | 0.0100 | +0.1900 |")
    assert f"untrained ({base_model_id(str(tiny_bert_dir))})" in card


def test_export_refuses_a_pooling_st_lacks_in_one_line(tiny_bert_dir, home, tmp_path, capsys):
    _trained(tiny_bert_dir, home, pooling="prompt")
    capsys.readouterr()
    assert main(["export", "model", "pst-prompt", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pooling 'prompt' has no sentence-transformers module" in err
    assert not (tmp_path / "o").exists()
    assert main(["export", "model", "nosuchmodel", str(tmp_path / "o")]) == 2
    assert "unknown model 'nosuchmodel'" in capsys.readouterr().err


@pytest.mark.slow
def test_export_bundled_minilm_keeps_normalize(minilm_dir, home, tmp_path):
    from sentence_transformers import SentenceTransformer

    assert main(["export", "model", "minilm", str(tmp_path / "mini")]) == 0
    st = SentenceTransformer(str(tmp_path / "mini"), device="cpu")
    assert st.max_seq_length == 256 and type(list(st)[-1]).__name__ == "Normalize"
    ref = encode_texts(str(minilm_dir), TEXTS, pooling="mean", max_length=256, device="cpu", normalize=True)
    np.testing.assert_allclose(st.encode(TEXTS, batch_size=8), ref, atol=1e-5)
    assert "apache-2.0" in (tmp_path / "mini" / "README.md").read_text()
