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
    p.add_argument("--new", action="store_true", help="create the alias although its config never ran or its name is "
                                                      "one edit from an alias that exists (a typo is refused without it)")
    p.set_defaults(func=_promote)
    p = sub.add_parser("rollback", help="return an alias to the model it named before its last promotion",
                       description="A new change (nothing is deleted): the alias names the model before its newest "
                                   "promotion still standing; `defsentflow serve` answers from it at the next request. "
                                   "Both figures are shown; a target that scores lower is rolled back to only after a "
                                   "confirmation (--yes).")
    p.add_argument("alias", metavar="NAME", help="CONFIG@LABEL, e.g. demo@champion")
    p.add_argument("--yes", action="store_true", help="roll back without asking when the target scores lower")
    p.set_defaults(func=_rollback)
    p = sub.add_parser("aliases", help="every alias and the model it names since when; with NAME, its history",
                       description="Without NAME: each alias, the model it names, since when and how. With NAME: "
                                   "every change of it (the gate's promotions, promote, rollback), with who, from "
                                   "which model to which and the figures that decided.")
    p.add_argument("alias", nargs="?", metavar="NAME", help="CONFIG@LABEL: its whole history")
    p.add_argument("--retire", metavar="NAME", help="retire the alias CONFIG@LABEL: it names nothing from now on (a "
                                                    "change of its history, restored by `catalog rebuild`)")
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
    from defsentflow.registry import compare, new_alias_problem, promote

    alias = _check_alias(args.alias)
    cat = _catalog(reader=False)
    if not args.new and (problem := new_alias_problem(cat, alias)):
        raise UserError(f"{problem} (give --new to create it)")
    ref = find_model(args.model, root=cat.root)
    if ref.source != "catalog":
        raise UserError(f"{args.model!r} is a {ref.source} model, not one of the catalog: an alias names a model "
                        "by its catalog id (`defsentflow leaderboard` lists them; `defsentflow eval` files one)")
    plan = compare(cat, ref.model_id, alias)
    if plan.champion == ref.model_id:
        print(f"{alias} names {ref.model_id} already")
        return 0
    if plan.decision != "promoted" and not _confirmed(args.yes, plan.reason, f"promote {ref.model_id} to {alias}"):
        print("not promoted")
        return 1
    change = promote(cat, plan)
    print(f"{alias}: {change.from_model or '(new)'} -> {change.model_id} ({_figures(change)}); "
          f"undo: defsentflow rollback {alias}")
    return 0


def _confirmed(yes: bool, why: str, what: str) -> bool:
    """Whether to go on with ``what`` despite ``why``: ``--yes``, else the answer on a terminal (none:
    a one-line refusal naming --yes)."""
    from defsentflow.cli import UserError

    if yes:
        return True
    if not sys.stdin.isatty():
        raise UserError(f"{why}; give --yes to {what} all the same")
    return input(f"{printable(why)}\n{what} anyway? [y/N] ").strip().lower() in ("y", "yes")


def _figures(change) -> str:
    def fmt(v):
        return "none" if v is None else f"{v:.4g}"

    return f"{change.figure}: {fmt(change.from_value)} -> {fmt(change.value)}" if change.figure else "no figure"


def _rollback(args: argparse.Namespace) -> int:
    from defsentflow.registry import figure_value, rollback, rollback_preview
    from defsentflow.ties import beats

    alias = _check_alias(args.alias)
    cat = _catalog(reader=False)
    plan = rollback_preview(cat, alias, figure_of=figure_value)
    print(f"{alias}: {plan.from_model} -> {plan.model_id}? ({_figures(plan)})")
    if beats(plan.from_value, plan.value) and not _confirmed(
            args.yes, f"{plan.model_id} scores lower than {plan.from_model} ({_figures(plan)})",
            f"roll {alias} back to {plan.model_id}"):
        print("not rolled back")
        return 1
    change = rollback(cat, alias, figure_of=figure_value)
    print(f"{alias}: {change.from_model} -> {change.model_id} (rolled back; {_figures(change)})")
    return 0


def _aliases(args: argparse.Namespace) -> int:
    from defsentflow.registry import history, holders, retire

    if args.retire:
        change = retire(_catalog(reader=False), _check_alias(args.retire))
        print(f"{change.alias}: retired (it named {change.model_id}); `defsentflow aliases {change.alias}` shows its history")
        return 0
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
