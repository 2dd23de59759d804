"""The data root a command uses, chosen by the one rule and said in one line.

The rule (:func:`defsentflow.storage.paths.choose_data_root`): a config's ``home:`` (relative to
the config file), else ``--home DIR`` / ``$DEFSENTFLOW_HOME``, else the default: ``storage/`` of
the source checkout, or ``~/.local/share/defsentflow`` for an installed package. Every command
that may write the data root prints it, on stderr and first (a log redirected with ``2>&1`` starts
with it; stdout keeps the command's answer); a default root being created says so, with the way to
choose another.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["config_home", "use_data_root"]

_SAID: set[Path] = set()  # roots this process has announced


def config_home(config: str | None) -> tuple[str | None, str | None]:
    """``(home, config file)`` of a command's YAML config: its top-level ``home:`` (a harvest
    config's ``root:``); ``(None, None)`` without a readable one (the command reports its own errors)."""
    if not config:
        return None, None
    from defsentflow.config_tools import read_yaml_mapping, resolve_config

    try:
        path = resolve_config(config)
        data = read_yaml_mapping(path, what="config")
    except (OSError, ValueError):
        return None, None
    home = data.get("home") or data.get("root")
    return (home, str(path)) if isinstance(home, str) else (None, None)


def use_data_root(config_home: str | None = None, config_file: str | os.PathLike | None = None) -> Path:
    """Apply the rule for this process (``$DEFSENTFLOW_HOME`` is set, so stages and child processes
    agree) and print ``data root: ...`` once."""
    from defsentflow.storage.paths import choose_data_root

    root, how = choose_data_root(config_home, config_file)
    given = os.environ.get("DEFSENTFLOW_HOME")
    if config_home and given and Path(given).expanduser().resolve() != root:
        print(f"note: the config's home: {root} is used, not --home / $DEFSENTFLOW_HOME {given}", file=sys.stderr,
              flush=True)
    os.environ["DEFSENTFLOW_HOME"] = str(root)
    if root not in _SAID:
        _SAID.add(root)
        if how == "default" and not (root / "catalog.duckdb").exists() and not root.exists():
            print(f"data root: {root} (new, the default; choose another with --home DIR, $DEFSENTFLOW_HOME "
                  "or home: in the config)", file=sys.stderr, flush=True)
        else:
            print(f"data root: {root} ({how})", file=sys.stderr, flush=True)
    return root
