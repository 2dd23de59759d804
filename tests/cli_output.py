"""What a command wrote on stderr, read by tests."""

from __future__ import annotations


def without_root_line(err: str) -> str:
    """``err`` without the ``data root: ...`` line a writing command starts stderr with
    (:func:`defsentflow.cli.home.use_data_root`): what is left of a bad input is one error line."""
    first, sep, rest = err.partition("\n")
    return rest if sep and first.startswith("data root: ") else err
