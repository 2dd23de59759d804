"""``defsentflow promote MODEL --alias NAME``, ``rollback NAME``, ``aliases [NAME]``: the model registry."""

from __future__ import annotations

import argparse
import sys

from defsentflow.cli.table import print_table, printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("promote", help="make an alias (CONFIG@LABEL, e.g. demo@champion) name a model, by hand",
                       description="Point the alias at MODEL (any id `defsentflow leaderboard` prints, or another alias). "
                                   "Both models are compared on the figure the alias's holder was promoted by; a model "
                                   "that is not better (or not comparable) is promoted only after a confirmation "
                                   "(--yes). The change is recorded with who, when and both figures; "
                                   "`defsentflow rollback` undoes it.")
    p.add_argument("model", help="the model: a catalog id, a name (pst-demo-1a2b3c4d) or an alias")
    p.add_argument("--alias", required=True, metavar="NAME", help="CONFIG@LABEL, e.g. demo@champion")
    p.add_argument("--yes", action="store_true", help="promote without asking when the model is not better")
    p.set_defaults(func=_promote)
    p = sub.add_parser("rollback", help="return an alias to the model it named before its last promotion",
                       description="A new change (nothing is deleted): the alias names the model before its newest "
                                   "promotion still standing; `defsentflow serve` answers from it at the next request.")
    p.add_argument("alias", metavar="NAME", help="CONFIG@LABEL, e.g. demo@champion")
    p.set_defaults(func=_rollback)
    p = sub.add_parser("aliases", help="every alias and the model it names since when; with NAME, its history",
                       description="Without NAME: each alias, the model it names, since when and how. With NAME: "
                                   "every change of it (the gate's promotions, promote, rollback), with who, from "
                                   "which model to which and the figures that decided.")
    p.add_argument("alias", nargs="?", metavar="NAME", help="CONFIG@LABEL: its whole history")
    p.set_defaults(func=_aliases)


def _catalog(*, reader: bool):
    from defsentflow.cli import UserError
    from defsentflow.storage import Catalog

    cat = Catalog(reader=reader)
    if not cat.path.is_file():
        raise UserError(f"no catalog at {cat.path} (a run creates it)")
    return cat


def _check_alias(name: str) -> str:
    from defsentflow.cli import UserError
    from defsentflow.storage.identifiers import check_alias

    try:
        return check_alias(name)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _promote(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.model.lookup import find_model
    from defsentflow.registry import compare, promote

    alias = _check_alias(args.alias)
    cat = _catalog(reader=False)
    ref = find_model(args.model, root=cat.root)
    if ref.source != "catalog":
        raise UserError(f"{args.model!r} is a {ref.source} model, not one of the catalog: an alias names a model "
                        "by its catalog id (`defsentflow leaderboard` lists them; `defsentflow eval` files one)")
    plan = compare(cat, ref.model_id, alias)
    if plan.champion == ref.model_id:
        print(f"{alias} names {ref.model_id} already")
        return 0
    if plan.decision != "promoted" and not args.yes:
        question = f"{printable(plan.reason)}\npromote {ref.model_id} to {alias} anyway? [y/N] "
        if not sys.stdin.isatty():
            raise UserError(f"{plan.reason}; give --yes to promote {ref.model_id} all the same")
        if input(question).strip().lower() not in ("y", "yes"):
            print("not promoted")
            return 1
    change = promote(cat, plan)
    print(f"{alias}: {change.from_model or '(new)'} -> {change.model_id} ({_figures(change)}); "
          f"undo: defsentflow rollback {alias}")
    return 0


def _figures(change) -> str:
    def fmt(v):
        return "none" if v is None else f"{v:.4g}"

    return f"{change.figure}: {fmt(change.from_value)} -> {fmt(change.value)}" if change.figure else "no figure"


def _rollback(args: argparse.Namespace) -> int:
    from defsentflow.registry import figure_value, rollback

    alias = _check_alias(args.alias)
    change = rollback(_catalog(reader=False), alias, figure_of=figure_value)
    print(f"{alias}: {change.from_model} -> {change.model_id} (rolled back; {_figures(change)})")
    return 0


def _aliases(args: argparse.Namespace) -> int:
    from defsentflow.registry import history, holders

    cat = _catalog(reader=True)
    if args.alias:
        changes = history(cat, _check_alias(args.alias))
        if not changes:
            from defsentflow.cli import UserError

            raise UserError(f"no alias {args.alias!r} (`defsentflow aliases` lists them)")
        print_table(["#", "when", "action", "from", "to", "figure", "from value", "to value", "who", "run", "note"],
                    [(c.seq, str(c.changed_at)[:19], c.action, c.from_model, c.model_id, c.figure, c.from_value, c.value,
                      c.who, c.run_id, c.note) for c in changes])
        return 0
    print_table(["alias", "model", "since", "by", "changes"],
                [(c.alias, c.model_id, str(c.changed_at)[:19], c.action + (f" {c.run_id}" if c.run_id else ""), c.seq)
                 for c in holders(cat)])
    return 0
