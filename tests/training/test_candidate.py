"""One unit of training work: one rule for a model's key, id and folders; specs by reference; idempotent."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.model.ids import model_slot
from defsentflow.training.candidate import plan_candidate, plan_training, train_candidate
from defsentflow.training.data import load_training_data
from defsentflow.training.entry_matrix import build_entry_matrix
from defsentflow.training.keys import base_model_of
from defsentflow.training.pst_config import DefSentSection, GridPoint
from defsentflow.training.step_plan import selection_plan
from tests.dictionary_tables import register_table
from tests.training.test_pst_schedule import section, toy_dictionary


def test_one_rule_names_every_trained_model():
    plus, plain = model_slot("defsent_plus", "ab" * 16), model_slot("defsent", "cd" * 16)
    assert (plus.model_id, plus.folder, plus.checkpoint) == (f"dsp-{'ab' * 6}", f"models/pst/{'ab' * 16}",
                                                           f"checkpoints/pst/{'ab' * 16}")
    assert plain.model_id == f"defsent-{'cd' * 6}" and plain.folder.startswith("models/pst/")


def _big_table(n_entries: int) -> pa.Table:
    rng = np.random.default_rng(0)
    words = "the a small large animal water house red fruit young old king".split()
    rows = [(f"w{i}", " ".join(rng.choice(words, 8)) + f" {i}.{j}", ("train", "dev", "test")[i % 10 // 8 + (i % 10 == 9)])
            for i in range(n_entries) for j in range(2)]
    return pa.table({"entry": [r[0] for r in rows], "definition": [r[1] for r in rows], "split": [r[2] for r in rows]})


def test_a_candidate_spec_carries_references_not_the_training_set(tiny_bert_dir, home):
    register_table("big", _big_table(3000), home)
    sec = section(tiny_bert_dir, dictionary="big", selection="revdict-mrr")
    data = load_training_data("big", root=home)
    assert len(data.definitions) > 4000
    matrix = build_entry_matrix(sec, data, encoder=str(tiny_bert_dir), encoder_id=base_model_of(sec)[1],
                                encoding="amp", ica=False, root=home)
    spec = plan_candidate(sec, data, selection_plan(sec, data), step=1, seed=0, grid=GridPoint(), lr=1e-4,
                          matrix=matrix, root=home)
    size = len(pickle.dumps(spec))
    assert size < 6000, f"a pickled candidate spec is {size} bytes"
    assert data.definitions[0] not in pickle.dumps(spec).decode("latin-1")
    assert spec.train.data.load(home).train_hash == data.train_hash  # what the worker reads back is what was planned
    assert spec.train.entry_matrix == f"pst/entry_matrices/{matrix.key}"  # root-relative
    assert spec.dictionary is not None and not spec.dictionary.startswith("/")


@pytest.fixture()
def toy_matrix(tiny_bert_dir, home):
    """(section, training data, entry matrix) of the toy dictionary in this test's data root."""
    register_table("toy", toy_dictionary(), home)
    data = load_training_data("toy", root=home)
    sec = section(tiny_bert_dir)
    matrix = build_entry_matrix(sec, data, encoder=str(tiny_bert_dir), encoder_id=base_model_of(sec)[1],
                                encoding="amp", ica=False, root=home)
    return sec, data, matrix


def test_defsent_and_defsent_plus_are_planned_by_one_function(toy_matrix, tiny_mlm_dir, home):
    sec, data, matrix = toy_matrix
    plus = plan_training(sec, data, method="defsent_plus", pooling="mean", lr=1e-4, seed=0, matrix=matrix, step=1,
                         root=home)
    ds = DefSentSection(base_model=str(tiny_mlm_dir), dictionary="toy", method="defsent", pooling="cls")
    plain = plan_training(ds, data, method="defsent", pooling="cls", lr=1e-4, seed=0, root=home)
    assert plus.slot.model_id.startswith("dsp-") and plain.slot.model_id.startswith("defsent-")
    assert plus.record["entry_matrix"] == f"../../../pst/entry_matrices/{matrix.key}"
    assert plus.record["entry_matrix_key"] == matrix.key and plus.record["pst_step"] == 1
    assert plain.record["base_model"] == str(tiny_mlm_dir) and "entry_matrix" not in plain.record
    with pytest.raises(ValueError, match="entry matrix"):
        plan_training(sec, data, method="defsent_plus", pooling="mean", lr=1e-4, seed=0, root=home)


def test_a_trained_candidate_is_returned_as_recorded(toy_matrix, home, monkeypatch):
    sec, data, matrix = toy_matrix
    spec = plan_training(sec, data, method="defsent_plus", pooling="mean", lr=1e-4, seed=0, matrix=matrix, root=home)
    first = train_candidate(spec, root=home, run_id="r1")
    assert first["key"] == spec.slot.key and first["model"]["model_id"] == spec.slot.model_id
    assert first["path"] == spec.slot.folder  # root-relative in the record
    import defsentflow.training.loop as loop

    monkeypatch.setattr(loop, "train_encoder", lambda *a, **k: pytest.fail("trained twice"))
    assert train_candidate(spec, root=home, run_id="r1") == first
