"""The model record (defsentflow.json): typed, portable, bounded, read and written in one place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from defsentflow.model.record import (
    RECORD_FILE,
    ModelRecord,
    model_ref,
    read_model_record,
    record_of,
    resolve_ref,
    write_model_record,
)


def test_round_trip_keeps_known_and_unknown_fields(tmp_path):
    rec = ModelRecord.from_dict({"pooling": "cls", "method": "defsent_plus", "train_splits": ["train"],
                                 "losses": [1, 0.5], "ica": True, "inputs": {"corpora": ["bbc"]}})
    assert rec.pooling == "cls" and rec.train_splits == ("train",) and rec.losses == (1.0, 0.5)
    assert rec.extra == {"inputs": {"corpora": ["bbc"]}}
    write_model_record(tmp_path, rec)
    back = read_model_record(tmp_path)
    assert back == rec
    assert json.loads((tmp_path / RECORD_FILE).read_text())["inputs"] == {"corpora": ["bbc"]}


def test_defaults_are_written_once():
    bare = ModelRecord()
    assert bare.pooling is None and bare.use_pooler is None and bare.trained_splits == ("train",) and bare.ica is False
    assert record_of(None) == bare and record_of("minilm") == bare  # no folder: the defaults


@pytest.mark.parametrize("field,value,why", [
    ("pooling", 3, "'pooling' must be str"),
    ("ica", "yes", "'ica' must be bool"),
    ("pst_step", True, "'pst_step' must be int, got a boolean"),
    ("train_splits", "train", "'train_splits' must be a list of strings"),
    ("losses", ["x"], "'losses' must be a list of numbers"),
    ("config", [1], "'config' must be an object"),
])
def test_a_wrong_type_is_one_line_naming_the_file_and_field(tmp_path, field, value, why):
    (tmp_path / RECORD_FILE).write_text(json.dumps({field: value}))
    with pytest.raises(ValueError, match=why) as err:
        read_model_record(tmp_path)
    assert str(tmp_path / RECORD_FILE) in str(err.value) and "\n" not in str(err.value)


def test_not_json_or_too_large_is_refused(tmp_path, monkeypatch):
    (tmp_path / RECORD_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="the model record is not JSON"):
        read_model_record(tmp_path)
    import defsentflow.model.record as mr

    monkeypatch.setattr(mr, "MAX_RECORD_BYTES", 4)
    (tmp_path / RECORD_FILE).write_text("{}   ")
    with pytest.raises(ValueError, match=r"the model record has 5 bytes \(limit 4\)"):
        read_model_record(tmp_path)


def test_bounded_like_every_record(tmp_path):
    """64 MiB and the nesting bound of every other record (storage.bounded_json)."""
    from defsentflow.limits import LIMITS
    from defsentflow.model.record import MAX_RECORD_BYTES

    assert MAX_RECORD_BYTES == LIMITS["record_bytes"] == 64 * 2**20
    deep = "[" * (LIMITS["nesting"] + 5) + "]" * (LIMITS["nesting"] + 5)
    (tmp_path / RECORD_FILE).write_text('{"config": {"x": ' + deep + "}}")
    with pytest.raises(ValueError, match="nested deeper than") as err:
        read_model_record(tmp_path)
    assert str(tmp_path / RECORD_FILE) in str(err.value) and "\n" not in str(err.value)


def test_the_field_list_is_the_dataclass():
    """Every field of the record is checked (a field without a check is refused at import, never read
    back as its default); FIELDS is the dataclass's list."""
    import dataclasses

    from defsentflow.model.record import _FIELDS, FIELDS

    assert FIELDS == tuple(f.name for f in dataclasses.fields(ModelRecord) if f.name != "extra") == tuple(_FIELDS)
    rec = ModelRecord.from_dict({f: None for f in FIELDS})
    assert rec.extra == {}  # every declared field is read as a field


def test_references_inside_the_root_are_relative_to_the_model_folder(tmp_path):
    root = tmp_path / "root"
    model = root / "models" / "pst" / "k2"
    matrix = root / "pst" / "entry_matrices" / "m1"
    assert model_ref(matrix, model, root) == "../../../pst/entry_matrices/m1"
    assert model_ref(root / "models" / "pst" / "k1", model, root) == "../k1"
    assert model_ref("minilm", model, root) == "minilm"  # a name stays a name
    assert model_ref(tmp_path / "elsewhere", model, root) == str(tmp_path / "elsewhere")  # the user's folder
    assert resolve_ref(model, "../k1") == str((root / "models" / "pst" / "k1").resolve())
    assert resolve_ref(model, "minilm") == "minilm"


def test_a_copied_folder_resolves_against_its_new_place(tmp_path):
    root = tmp_path / "root"
    model, matrix = root / "models" / "pst" / "k", root / "pst" / "entry_matrices" / "m"
    model.mkdir(parents=True)
    matrix.mkdir(parents=True)
    write_model_record(model, {"entry_matrix": model_ref(matrix, model, root), "entry_encoder": "minilm"})
    moved = tmp_path / "moved"
    root.rename(moved)
    m = moved / "models" / "pst" / "k"
    assert read_model_record(m).entry_matrix_dir(m) == (moved / "pst" / "entry_matrices" / "m").resolve()


def test_records_of_earlier_versions_still_read(tmp_path):
    """Absolute paths and an entry_matrix naming the .npy file, as written before this module."""
    (tmp_path / RECORD_FILE).write_text(json.dumps({"entry_matrix": "/data/pst/entry_matrices/m/matrix.npy",
                                                   "base_model": "/venv/minilm"}))
    rec = read_model_record(tmp_path)
    assert rec.entry_matrix_dir(tmp_path) == Path("/data/pst/entry_matrices/m")
    assert rec.base_model_path(tmp_path) == "/venv/minilm"


def test_the_entry_matrix_is_written_as_its_folder(tmp_path):
    """The folder is the only reference: a reference to its matrix.npy is written as the folder."""
    write_model_record(tmp_path, {"entry_matrix": "../../../pst/entry_matrices/m/matrix.npy"})
    assert json.loads((tmp_path / RECORD_FILE).read_text())["entry_matrix"] == "../../../pst/entry_matrices/m"
