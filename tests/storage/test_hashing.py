from __future__ import annotations

import shutil

from defsentflow.storage import code_version, hash_config, hash_path


def test_directory_hash_is_content_based(tmp_path):
    a = tmp_path / "a"
    (a / "sub").mkdir(parents=True)
    (a / "x.txt").write_text("1")
    (a / "sub" / "y.txt").write_text("2")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    assert hash_path(a) == hash_path(b)
    (b / "sub" / "y.txt").write_text("3")
    assert hash_path(a) != hash_path(b)


def test_config_hash_ignores_key_order():
    assert hash_config({"a": 1, "b": [1, 2]}) == hash_config({"b": [1, 2], "a": 1})
    assert hash_config({"a": 1}) != hash_config({"a": 2})


def test_code_version_has_package_version():
    assert code_version().startswith("0.")
