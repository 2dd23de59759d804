"""``key = value`` lines for the device checks (bench/gpu_*.py): printed as they come and kept, all of
them so far, in one JSON file under ``$OUT`` (the device machine brings that folder back)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def key_value_log(filename: str) -> Callable[[str, object], None]:
    """A ``log(key, value)`` that prints ``key = value`` and rewrites ``$OUT/<filename>`` with every
    pair logged so far (so a run cut short still leaves what it measured)."""
    out = Path(os.environ.get("OUT", tempfile.gettempdir()))
    results: dict[str, object] = {}

    def log(key: str, value: object) -> None:
        results[key] = value
        print(key, "=", value, flush=True)
        out.mkdir(parents=True, exist_ok=True)
        (out / filename).write_text(json.dumps(results, indent=1, default=str))

    return log
