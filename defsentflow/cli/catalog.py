"""``defsentflow sql`` (read-only queries) and ``defsentflow datasets``."""

from __future__ import annotations

import argparse
import re

from defsentflow.cli.table import print_table

_WRITE = re.compile(
    r"^\s*(INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|COPY|ATTACH|DETACH|INSTALL|LOAD|PRAGMA|SET|CALL|CHECKPOINT|EXPORT|IMPORT|VACUUM|TRUNCATE|BEGIN|COMMIT|ROLLBACK)\b",
    re.IGNORECASE,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sql", help="run a read-only SQL query against the catalog")
    p.add_argument("query")
    p.set_defaults(func=_sql)
    p = sub.add_parser("datasets", help="dictionary datasets with entry, definition and split counts")
    p.set_defaults(func=_datasets)


def _sql(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.storage import Catalog

    if _WRITE.match(args.query):
        raise UserError("the sql command is read-only; it refuses statements that write")
    cat = Catalog()
    # A read-only connection makes DuckDB itself refuse any write that slips past the check above.
    import duckdb

    try:
        cols, rows = cat.query_table(args.query)
    except duckdb.Error as exc:
        raise UserError(str(exc).splitlines()[0]) from exc
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
