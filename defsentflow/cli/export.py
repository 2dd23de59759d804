"""``defsentflow export model|dictionary|pairs``: what a user takes away, in the formats others load."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a model (sentence-transformers + card) or a dataset (Hugging Face)")
    group = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    m = group.add_parser("model", help="a model as a sentence-transformers folder with a model card",
                         description="Write MODEL (a catalog model id, e.g. the one `defsentflow leaderboard` shows, "
                                     "or a model folder) to DIR: SentenceTransformer(DIR) encodes as the evaluation "
                                     "did; README.md is the model card.")
    m.add_argument("model")
    m.add_argument("dir", help="a new or empty folder, or an earlier export of this command")
    m.set_defaults(func=_model)
    for what, thing in (("dictionary", "a dictionary dataset (see `defsentflow datasets`)"),
                        ("pairs", "harvested pairs (artifact name <corpus>-pairs or key)")):
        d = group.add_parser(what, help=f"{thing} as a Hugging Face DatasetDict (train/validation/test) with a card",
                             description=f"Write {thing} to DIR: datasets.load_from_disk(DIR) gives train, validation "
                                         "and test; data/<split>.parquet holds the same rows per split.")
        d.add_argument("name")
        d.add_argument("dir", help="a new or empty folder, or an earlier export of this command")
        d.set_defaults(func=_dataset, what=what)


def _model(args: argparse.Namespace) -> int:
    from defsentflow.exports.model import export_model

    out = export_model(args.model, args.dir)
    print(f"exported {args.model} to {out} (load it with SentenceTransformer({str(out)!r}))")
    return 0


def _dataset(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.exports.datasets import export_dictionary, export_pairs

    fn = export_dictionary if args.what == "dictionary" else export_pairs
    try:
        sizes = fn(args.name, args.dir)
    except KeyError as exc:
        raise UserError(str(exc.args[0] if exc.args else exc)) from None
    print(f"exported {args.what} {args.name} to {args.dir}: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    return 0
