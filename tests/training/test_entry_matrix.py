"""One entry matrix: the pipeline's builder writes the one layout that every reader loads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from defsentflow.model.entry_matrix import EntryMatrix
from defsentflow.storage import Catalog
from defsentflow.training.data import load_training_data
from defsentflow.training.entry_matrix import build_entry_matrix
from defsentflow.training.keys import base_model_of
from tests.dictionary_tables import register_table
from tests.training.test_pst_protocol import section, wide_dictionary


def test_the_pipeline_builder_writes_the_one_layout_and_reuses_it(tiny_bert_dir, home, monkeypatch):
    register_table("wide", wide_dictionary(), home)
    sec = section(tiny_bert_dir)
    data = load_training_data("wide", root=home)
    ref = build_entry_matrix(sec, data, encoder=str(tiny_bert_dir), encoder_id=base_model_of(sec)[1],
                             encoding="amp", ica=True, root=home)
    folder = home / "pst" / "entry_matrices" / ref.key
    assert ref.path == str(folder)
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "entries.parquet", "entry_space.png", "ica.npz", "matrix.npy", "meta.json"]
    em = EntryMatrix.load(folder, mmap=True)
    assert isinstance(em.matrix, np.memmap) and em.entries == data.entries and em.ica is not None
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["encoding"] == "amp" and meta["ica"] is True and meta["n_entries"] == len(data.entries)
    assert meta["encoder"] == str(tiny_bert_dir) and meta["stats"]["n_entries"] == len(data.entries)
    assert (ref.encoder, ref.n_entries, ref.dim) == (str(tiny_bert_dir), len(data.entries), em.matrix.shape[1])
    registered = Catalog(home).artifact(ref.key)
    assert registered["kind"] == "entry_matrix" and "stats" not in (registered["meta"] or {})
    import defsentflow.training.entry_shards as shards

    monkeypatch.setattr(shards, "build_entry_matrix_sharded", lambda *a, **k: pytest.fail("built twice"))
    again = build_entry_matrix(sec, data, encoder=str(tiny_bert_dir), encoder_id=base_model_of(sec)[1],
                               encoding="amp", ica=True, root=home)
    assert again == ref


def test_a_reference_to_the_npy_file_reads_the_folder(tmp_path):
    em = EntryMatrix(entries=["b", "a"], matrix=np.eye(2, dtype=np.float32), meta={"encoding": "ac"})
    em.save(tmp_path / "m")
    back = EntryMatrix.load(tmp_path / "m" / "matrix.npy")  # how model records named it before the folder form
    assert back.entries == ["b", "a"] and back.meta == {"encoding": "ac"} and back.ica is None
