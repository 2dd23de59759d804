"""What the catalog template saves: N new data roots, each catalog created by applying every DDL file
in place (the way before ``storage/catalog_template.py``), against the same N roots whose catalogs
are copies of the process's template (the first one builds it, and is counted).

    python bench/catalog_new.py [N]     # default 20 new roots (a sweep's points, a test session's roots)

Each new root does what a first command does: open the catalog for writing and record a run. Prints
the CPU seconds of both (median of 5 repeats, each in new directories) and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import defsentflow.storage.catalog as catalog_module
import defsentflow.storage.catalog_template as template_module
from defsentflow.storage import Catalog


def new_roots(base: Path, n: int) -> None:
    for i in range(n):
        Catalog(base / f"root-{i}").start_run("bench", run_id="r0")


def cpu(n: int, *, template: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        template_module._TEMPLATE.clear()  # the first new root of the process builds it
        t = time.process_time()
        if template:
            new_roots(Path(tmp), n)
        else:
            with mock.patch.object(catalog_module, "create_catalog_file", lambda path, version: False):
                new_roots(Path(tmp), n)
        return time.process_time() - t


def main(n: int) -> None:
    cpu(2, template=True)  # warm: imports, DuckDB loaded
    in_place = statistics.median(cpu(n, template=False) for _ in range(5))
    copied = statistics.median(cpu(n, template=True) for _ in range(5))
    print(f"{n} new data roots: each schema applied in place {in_place:.3f} s of CPU, copies of the template "
          f"{copied:.3f} s ({in_place / copied:.1f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
