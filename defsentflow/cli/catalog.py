"""``defsentflow sql`` (read-only queries), ``defsentflow verify``, ``defsentflow datasets`` and
``defsentflow catalog rebuild``."""

from __future__ import annotations

import argparse
import os

from defsentflow.cli.table import print_table
from defsentflow.limits import LIMITS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sql", help="run one read-only SQL statement against the catalog (no file access)")
    p.add_argument("query")
    p.add_argument("--timeout", type=_positive_seconds, default=30.0, metavar="S",
                   help="interrupt the query after S seconds (default 30), so it never holds the catalog from a run")
    p.set_defaults(func=_sql)
    p = sub.add_parser("verify", help="re-hash every registered artifact and report those that changed",
                       description="Compare each artifact's files with the manifest recorded when it was registered "
                                   "(full content hashes; --quick: sizes and head/tail hashes). Exit status 1 if any "
                                   "changed; a stage that finds its artifact changed recomputes it.")
    p.add_argument("--quick", action="store_true", help="sizes and quick hashes only")
    p.set_defaults(func=_verify)
    p = sub.add_parser("runs", help="recent runs: status (a run whose process is gone is interrupted) and the "
                                    "one-line reason of a run that did not complete")
    p.add_argument("--limit", type=int, default=20, help="how many, newest first (default 20)")
    p.set_defaults(func=_runs)
    p = sub.add_parser("datasets", help="dictionary datasets with entry, definition and split counts")
    p.set_defaults(func=_datasets)
    p = sub.add_parser("catalog", help="catalog maintenance: rebuild it from the artifact records on disk")
    csub = p.add_subparsers(dest="catalog_command", required=True)
    r = csub.add_parser("rebuild", help="register every artifact record under the data root (a lost, emptied or "
                                        "corrupt catalog; a corrupt file is kept aside, never deleted)")
    r.set_defaults(func=_rebuild)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"a time limit must be in (0, 86400] seconds: {text!r}")
    return value


def _rebuild(args: argparse.Namespace) -> int:
    from defsentflow.cli.table import printable
    from defsentflow.storage.rebuild import rebuild_catalog

    counts = rebuild_catalog()
    if counts.get("corrupt_moved"):
        print("the corrupt catalog was kept aside as catalog.duckdb.corrupt-<time>")
    for line in counts["problems"]:
        print(f"refused: {printable(line)}")
    for line in counts["left_out"]:
        print(f"left out: {printable(line)}")
    print(f"catalog rebuilt from {counts['records']} artifact records and {counts['row_records']} row records: "
          f"{counts['artifacts']} artifacts, {counts['models']} models, {counts['metrics']} metrics, "
          f"{counts['runs']} runs, {counts['alias_changes']} alias changes; {counts['refused']} records refused "
          f"({counts['quarantined']} moved to "
          "quarantine/records/)")
    return 0


def close_interrupted_runs() -> None:
    """Close ``interrupted`` the runs whose process is gone, where the catalog may be written (a
    read-only data root is left as it is; the listing shows such runs interrupted anyway). ``sql``
    never writes: there a dead run reads ``interrupted`` once a command has started a run since
    (:func:`~defsentflow.storage.runs.recorded_run` closes them first) or ``runs`` has listed it."""
    from defsentflow.storage import Catalog
    from defsentflow.storage.runs import mark_interrupted_runs

    cat = Catalog(create=False)
    if cat.path.is_file() and os.access(cat.path, os.W_OK) and os.access(cat.root, os.W_OK):
        mark_interrupted_runs(cat)


def _runs(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError, check_count
    from defsentflow.registry import shown_decision
    from defsentflow.storage import Catalog
    from defsentflow.storage.runs import shown

    check_count(args.limit, "--limit", LIMITS["rows"])
    cat = Catalog(reader=True)
    if not cat.path.is_file():
        raise UserError(f"no catalog at {cat.path} (a run or an ingest creates it)")
    close_interrupted_runs()
    rows = [shown(r) for r in cat.query("SELECT * EXCLUDE (config), json_extract_string(config, '$.name') AS name, "
                                        "round(epoch(ended_at - started_at), 1) AS seconds FROM runs "
                                        "ORDER BY started_at DESC LIMIT ?", [args.limit])]
    print_table(["run", "flow", "name", "status", "started", "seconds", "champion", "reason"],
                [(r["run_id"], r["flow"], r["name"], r["status"], str(r["started_at"])[:19], r["seconds"],
                  shown_decision(r.get("promotion"), r.get("promotion_why")), r["reason"] or r.get("promotion_note"))
                 for r in rows])
    return 0


def _sql(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.storage import Catalog, CatalogLockedError

    try:
        cols, rows = Catalog(reader=True, query_timeout=args.timeout).user_query(args.query)
    except (ValueError, CatalogLockedError) as exc:  # a writer kept the catalog past the wait: one line
        raise UserError(str(exc)) from exc
    print_table(cols, rows)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.storage import Catalog

    cat = Catalog(reader=True)
    if not cat.path.is_file():
        raise UserError(f"no catalog at {cat.path}")
    rows = cat.verify_artifacts(full=not args.quick)
    bad = [r for r in rows if r["status"] != "ok"]
    print_table(["artifact", "kind", "name", "status", "detail"],
                [(r["key"], r["kind"], r["name"], r["status"], r["detail"]) for r in bad] or [])
    print(f"{len(rows)} artifacts checked ({'quick' if args.quick else 'full'}): {len(rows) - len(bad)} ok, {len(bad)} changed")
    return 1 if bad else 0


def _datasets(args: argparse.Namespace) -> int:
    from defsentflow.storage import Catalog

    cols, rows = Catalog(reader=True).query_table(_sql_file("datasets.sql"))
    print_table(cols, rows)
    return 0


def _sql_file(name: str) -> str:
    from defsentflow.storage import sql_dir

    return (sql_dir() / "queries" / name).read_text()
