"""What ``Catalog.session`` saves: N catalog reads, each opening the file (each open starts a DuckDB
instance, about 20 ms of CPU), against the same N reads inside one session (one instance start).

    python bench/catalog_session.py [N]     # default 20 reads (a run report makes a few dozen)

Prints the CPU seconds of both (median of 7 repeats on one data root with 200 runs and 2,000 metric
rows) and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from defsentflow.storage import Catalog

QUERIES = ("SELECT * FROM runs ORDER BY started_at DESC LIMIT 5", "SELECT count(*) AS n FROM metrics",
           "SELECT * FROM metrics WHERE model_id = 'm7'", "SELECT * FROM artifacts LIMIT 10")


def reads(cat: Catalog, n: int) -> None:
    for i in range(n):
        cat.query(QUERIES[i % len(QUERIES)])


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cat = Catalog(tmp)
        for i in range(200):
            cat.start_run("bench", run_id=f"run-{i}")
        cat.record_metrics("m7", [{"task": "sts12", "setting": f"s{i}", "metric": "spearman", "value": i / 10}
                                  for i in range(2000)])

        def in_session() -> None:
            with cat.session(read_only=True):
                reads(cat, n)

        plain = statistics.median(cpu(lambda: reads(cat, n)) for _ in range(7))
        held = statistics.median(cpu(in_session) for _ in range(7))
        print(f"{n} reads: each opening the file {plain:.3f} s of CPU, in one session {held:.3f} s "
              f"({plain / held:.1f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
