"""``defsentflow sql`` (read-only queries) and ``defsentflow datasets``."""

from __future__ import annotations

import argparse

from defsentflow.cli.table import print_table

def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sql", help="run one read-only SQL statement against the catalog (no file access)")
    p.add_argument("query")
    p.set_defaults(func=_sql)
    p = sub.add_parser("datasets", help="dictionary datasets with entry, definition and split counts")
    p.set_defaults(func=_datasets)


def _sql(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.storage import Catalog

    try:
        cols, rows = Catalog(create=False).user_query(args.query)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    print_table(cols, rows)
    return 0


def _datasets(args: argparse.Namespace) -> int:
    from defsentflow.storage import Catalog

    cols, rows = Catalog().query_table((_sql_file("datasets.sql")))
    print_table(cols, rows)
    return 0


def _sql_file(name: str) -> str:
    from defsentflow.storage import sql_dir

    return (sql_dir() / "queries" / name).read_text()
