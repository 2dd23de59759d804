"""Aliases: a per-config name (``demo@champion``) for one model at a time, and its history.

An alias is a name of the catalog, not a folder: ``alias_changes`` holds one row per change (the
promotion gate after a pipeline run, ``defsentflow promote``, ``defsentflow rollback``) with who made
it, when, from which model to which and the figures that decided; rows are only ever added, and the
holder is the newest row (the ``alias_holders`` view). Every command that takes a model id takes an
alias (:func:`~defsentflow.model.lookup.find_model` reads the holder through ``model_ids``), and
``defsentflow serve`` resolves one at request time. Each change is mirrored to the alias's row record
(``records/aliases/``), so ``catalog rebuild`` restores every alias and its history.

An alias is created by the gate's first promotion for its config, or by ``defsentflow promote
--alias NAME --new``: a new name whose config never ran, or that is one edit from an alias that
exists (``demo@champoin``), is refused without ``--new`` (:func:`new_alias_problem`, "did you mean
...?"). ``defsentflow aliases --retire NAME`` retires one: a ``retire`` row (the history stays, and
``catalog rebuild`` restores it); a retired alias names nothing, and a later promotion starts it anew.

A rollback undoes the newest promotion still standing: the history is replayed as a stack (a
promotion pushes its model, a rollback pops), so two rollbacks after three promotions lead back to
the first model, never back and forth between the last two.

Example:
    >>> change = record_change(cat, "demo@champion", "dsp-1a2b3c4d5e6f", action="promote")
    >>> holder(cat, "demo@champion").model_id
    'dsp-1a2b3c4d5e6f'
    >>> rollback(cat, "demo@champion").model_id  # the holder before it
"""

from __future__ import annotations

import difflib
import getpass
import os
import socket
from dataclasses import asdict, dataclass
from typing import Any, Literal

from defsentflow.storage.catalog import Catalog
from defsentflow.storage.identifiers import check_alias, check_identifier

__all__ = ["CHAMPION", "Action", "AliasChange", "champion_alias", "changes_on", "demoted", "history", "holder", "holders",
           "is_alias", "new_alias_problem", "no_alias", "record_change", "retire", "rollback", "rollback_preview",
           "rollback_target", "standing", "who"]

CHAMPION = "champion"
"""The label the promotion gate keeps: ``<config name>@champion``."""

Action = Literal["gate", "promote", "rollback", "retire"]
_COLUMNS = ("alias", "seq", "model_id", "from_model", "action", "who", "run_id", "figure", "value", "from_value",
            "note", "changed_at")


@dataclass(frozen=True)
class AliasChange:
    """One row of ``alias_changes``: from this change on, ``alias`` names ``model_id``."""

    alias: str
    seq: int
    model_id: str
    from_model: str | None
    action: str
    who: str
    run_id: str | None = None
    figure: str | None = None       # the figure's registry name (a leaderboard column)
    value: float | None = None      # model_id's figure
    from_value: float | None = None  # from_model's figure
    note: str | None = None
    changed_at: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "changed_at": str(self.changed_at)[:19] if self.changed_at is not None else None}


def champion_alias(config_name: str) -> str:
    """The alias the promotion gate keeps for config ``config_name``: ``<name>@champion``."""
    return check_alias(f"{check_identifier(config_name, 'config name')}@{CHAMPION}")


def is_alias(name: str) -> bool:
    """Whether ``name`` is written as an alias (``CONFIG@LABEL``); model ids never hold an ``@``."""
    try:
        check_alias(name)
    except ValueError:
        return False
    return True


def who() -> str:
    """``user@host`` of this process (the uid where no user name is known, as in some containers)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid{os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def _changes(con: Any, where: str = "", params: list | None = None) -> list[AliasChange]:
    rows = con.execute(f"SELECT {', '.join(_COLUMNS)} FROM alias_changes {where} ORDER BY alias, seq",
                       params or []).fetchall()
    return [AliasChange(*r) for r in rows]


def changes_on(con: Any, alias: str) -> list[AliasChange]:
    """Every change of ``alias``, oldest first, read on ``con`` (inside the caller's transaction)."""
    return _changes(con, "WHERE alias = ?", [check_alias(alias)])


def history(cat: Catalog, alias: str | None = None) -> list[AliasChange]:
    """Every change of ``alias`` (of every alias when None), oldest first."""
    with cat.connect(read_only=True) as con:
        return _changes(con, *(("WHERE alias = ?", [check_alias(alias)]) if alias else ()))


def holders(cat: Catalog) -> list[AliasChange]:
    """Each alias's newest change: what it names now, and since when."""
    with cat.connect(read_only=True) as con:
        return _changes(con, "WHERE (alias, seq) IN (SELECT (alias, changes) FROM alias_holders)")


def standing(changes: list[AliasChange]) -> AliasChange | None:
    """The newest of an alias's ``changes`` while it stands (its ``model_id`` is the model it names),
    None: it has none, or it was retired since."""
    return changes[-1] if changes and changes[-1].action != "retire" else None


def holder(cat: Catalog, alias: str) -> AliasChange | None:
    """The newest change of ``alias`` (its ``model_id`` is the model it names), or None: no such alias
    (or a retired one)."""
    return standing(history(cat, alias))


def _stack(changes: list[AliasChange]) -> list[str]:
    """The models promoted and not rolled back since the alias was last retired, oldest first (the holder last)."""
    stack: list[str] = []
    for c in changes:
        if c.action == "retire":
            stack.clear()
        elif c.action == "rollback":
            if stack:
                stack.pop()
        else:
            stack.append(c.model_id)
    return stack


def rollback_target(changes: list[AliasChange]) -> str | None:
    """The model a rollback of an alias with these changes returns to (None: there is none)."""
    stack = _stack(changes)
    return stack[-2] if len(stack) >= 2 else None


def demoted(changes: list[AliasChange]) -> dict[str, AliasChange]:
    """Models a rollback took the alias away from, and not promoted again since: model -> that rollback.
    The gate never promotes such a model by itself (a rollback is a person's decision)."""
    out: dict[str, AliasChange] = {}
    for c in changes:
        if c.action == "rollback" and c.from_model:
            out[c.from_model] = c
        else:
            out.pop(c.model_id, None)
    return out


def record_change(cat: Catalog, alias: str, model_id: str, *, action: Action, run_id: str | None = None,
                  figure: str | None = None, value: float | None = None, from_value: float | None = None,
                  note: str | None = None, con: Any = None) -> AliasChange:
    """Make ``alias`` name ``model_id`` (a model of the catalog): one new row, then the alias's row record.

    ``con``: a connection inside the caller's transaction (the caller then keeps the row record:
    ``cat.keep_rows("alias", [alias])``); without it the change is its own transaction.

    Raises:
        ValueError: not an alias, or ``model_id`` is no model of the catalog.
    """
    check_alias(alias)
    if con is None:
        with cat.transaction() as tx:
            change = record_change(cat, alias, model_id, action=action, run_id=run_id, figure=figure, value=value,
                                   from_value=from_value, note=note, con=tx)
        cat.keep_rows("alias", [alias])
        return change
    if not con.execute("SELECT 1 FROM models WHERE model_id = ?", [model_id]).fetchone():
        raise ValueError(f"{model_id!r} is no model of the catalog ({cat.path}): an alias names a model by its id")
    last = con.execute("SELECT seq, model_id, action FROM alias_changes WHERE alias = ? ORDER BY seq DESC LIMIT 1",
                       [alias]).fetchone()
    seq = last[0] + 1 if last else 1
    before = last[1] if last and last[2] != "retire" else None  # a retired alias starts anew
    con.execute(f"INSERT INTO alias_changes ({', '.join(_COLUMNS[:-1])}) VALUES ({', '.join('?' * (len(_COLUMNS) - 1))})",
                [alias, seq, model_id, before, action, who(), run_id, figure, value, from_value, note])
    return _changes(con, "WHERE alias = ? AND seq = ?", [alias, seq])[0]


def _rollback_plan(con: Any, alias: str, figure_of: Any) -> tuple[str, AliasChange, list[float | None]]:
    changes = changes_on(con, alias)
    current = standing(changes)
    if current is None:
        raise ValueError(no_alias(con, alias))
    target = rollback_target(changes)
    if target is None:
        raise ValueError(f"{alias} has no earlier model to roll back to: it names {current.model_id}, "
                         "its first promotion still standing (`defsentflow aliases` shows the history)")
    fig = current.figure
    return target, current, [figure_of(con, m, fig) if figure_of and fig else None for m in (target, current.model_id)]


def rollback_preview(cat: Catalog, alias: str, *, figure_of: Any = None) -> AliasChange:
    """What :func:`rollback` would record (``seq`` 0: not recorded), read-only: to show both figures first."""
    check_alias(alias)
    with cat.connect(read_only=True) as con:
        target, current, values = _rollback_plan(con, alias, figure_of)
    return AliasChange(alias, 0, target, current.model_id, "rollback", who(), figure=current.figure, value=values[0],
                       from_value=values[1])


def rollback(cat: Catalog, alias: str, *, figure_of: Any = None) -> AliasChange:
    """Return ``alias`` to the model it named before its newest standing promotion (a new row; nothing
    is deleted). ``figure_of(con, model_id, figure)``: the figures the change records (both models
    under the figure the holder was promoted by).

    Raises:
        ValueError: no such alias, or nothing to roll back to (one promotion only).
    """
    check_alias(alias)
    with cat.transaction() as con:
        target, current, values = _rollback_plan(con, alias, figure_of)
        change = record_change(cat, alias, target, action="rollback", figure=current.figure, value=values[0],
                               from_value=values[1], note=f"rolled back from {current.model_id}", con=con)
    cat.keep_rows("alias", [alias])
    return change


def _osa(a: str, b: str) -> int:
    """The edit distance of ``a`` and ``b`` with a swap of two neighbours one edit (``champoin``)."""
    d = [[i + j if not i * j else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def _standing_aliases(con: Any) -> list[str]:
    return [r[0] for r in con.execute("SELECT alias FROM alias_holders ORDER BY alias").fetchall()]


def no_alias(con: Any, alias: str) -> str:
    """The one line for a name that is no alias: ``no alias 'x'; aliases: ...`` (with "did you mean")."""
    known = _standing_aliases(con)
    close = difflib.get_close_matches(alias, known, n=1)
    return (f"no alias {alias!r}" + (f" (did you mean {close[0]}?)" if close else "")
            + f"; aliases: {', '.join(known) or 'none'}")


def new_alias_problem(cat: Catalog, alias: str) -> str | None:
    """Why creating ``alias`` looks like a typo (None: it exists, or it is plausibly new): its config never
    ran a pipeline and names no alias, or it is one edit from an alias that exists ("did you mean ...?")."""
    check_alias(alias)
    with cat.connect(read_only=True) as con:
        if standing(changes_on(con, alias)) is not None:
            return None
        known = _standing_aliases(con)
        config = alias.split("@", 1)[0]
        ran = con.execute("SELECT 1 FROM runs WHERE json_extract_string(config, '$.name') = ? LIMIT 1",
                          [config]).fetchone() or any(a.split("@", 1)[0] == config for a in known)
    near = [a for a in known if _osa(a, alias) == 1]
    why = [*([f"its config {config!r} never ran"] if not ran else []),
           *([f"it is one edit from {', '.join(near)}"] if near else [])]
    if not why:
        return None
    close = near or difflib.get_close_matches(alias, known, n=1)
    return f"{alias} would be a new alias, and {' and '.join(why)}" + (f"; did you mean {' or '.join(close)}?" if close else "")


def retire(cat: Catalog, alias: str) -> AliasChange:
    """Retire ``alias``: a ``retire`` row (nothing is deleted); it names nothing from now on.

    Raises:
        ValueError: no such alias (or retired already).
    """
    check_alias(alias)
    with cat.transaction() as con:
        current = standing(changes_on(con, alias))
        if current is None:
            raise ValueError(no_alias(con, alias))
        change = record_change(cat, alias, current.model_id, action="retire", note=f"retired; it named {current.model_id}",
                               con=con)
    cat.keep_rows("alias", [alias])
    return change
