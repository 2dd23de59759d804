"""The data root's layout is one table (storage.paths.DATA_ROOT_LAYOUT): writers, record checks and
the path rules read it, and no library module spells a root folder itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from defsentflow.storage.paths import DATA_ROOT_LAYOUT, ROOT_FOLDERS, from_root, root_place
from defsentflow.storage.record_checks import PLACES

LIBRARY = Path(__file__).resolve().parents[2]
SOURCES = [p for d in ("defsentflow", "flows", "tasks") for p in (LIBRARY / d).rglob("*.py")
           if p.name != "paths.py" or p.parent.name != "storage"]


def test_record_checks_read_the_kinds_folders_from_the_table():
    for place in DATA_ROOT_LAYOUT.values():
        if place.kind is not None:
            assert place.kind in PLACES
            folder, naming = PLACES[place.kind]
            assert place.folder == folder or place.folder.startswith(folder + "/")
    assert PLACES["entry_matrix"] == ("pst/entry_matrices", "name")
    assert PLACES["pst_result"] == ("pst/runs", "run")


def test_every_top_level_folder_is_a_root_folder(tmp_path):
    assert {p.folder.split("/")[0] for p in DATA_ROOT_LAYOUT.values()} <= ROOT_FOLDERS
    # a stored path under pst/ names the root's file even before the root holds a pst/ folder
    assert from_root(tmp_path, "pst/entry_matrices/k") == str(tmp_path / "pst" / "entry_matrices" / "k")
    assert from_root(tmp_path, "bert-base-uncased") == "bert-base-uncased"


def test_root_place_builds_and_checks_the_path(tmp_path):
    assert root_place(tmp_path, "pst_models", "abc") == (tmp_path / "models" / "pst" / "abc").resolve()
    with pytest.raises(ValueError, match="escapes the data root"):
        root_place(tmp_path, "reports", "..", "..", "x")
    with pytest.raises(KeyError, match="no place 'nope'"):
        root_place(tmp_path, "nope")


@pytest.mark.parametrize("folder", sorted({p.folder for p in DATA_ROOT_LAYOUT.values()}))
def test_no_module_spells_a_root_folder(folder):
    """Neither ``"models/pst"`` nor ``root / "models" / "pst"``: a folder of the table is named
    through :func:`root_place` / :func:`place_relpath` only."""
    parts = folder.split("/")
    joined = r'\s*/\s*'.join(f'"{re.escape(p)}"' for p in parts)
    patterns = [re.compile(rf'["\']{re.escape(folder)}[/"\']')] if len(parts) > 1 else []
    patterns.append(re.compile(rf'/\s*{joined}(\s*/|\s*$|\))', re.M))
    patterns.append(re.compile(r'under_root\((?!")[^)]*?,\s*' + r',\s*'.join(f'"{re.escape(p)}"' for p in parts) + r'\s*[,)]'))
    found = [f"{p.relative_to(LIBRARY)}: {m.group(0)!r}" for p in SOURCES for pat in patterns
             for line in p.read_text(encoding="utf-8").splitlines() if "resources.files" not in line  # package data
             for m in pat.finditer(line)]
    assert not found, found
