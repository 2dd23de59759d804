"""The cost of ``catalog rebuild`` against the number of metric rows one row record holds (issue 44, M7:
a record of 20,000 metrics took 96 s, 5 MB of them 284 s): it should grow linearly and stay in seconds.

    python bench/rebuild.py [N ...]     # default 5000 10000 20000 40000

Prints ``metrics, record MB, seconds`` per size, each on a fresh data root (median of 3 rebuilds).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from defsentflow.storage import Catalog
from defsentflow.storage.rebuild import rebuild_catalog
from defsentflow.storage.row_records import row_record_path


def root_with(n: int, base: Path) -> Path:
    root = base / f"root-{n}"
    cat = Catalog(root)
    cat.record_metrics("m", [{"task": "revdict-dev", "setting": "s", "metric": "mrr", "value": 0.5}])
    path = row_record_path(root, "model", "m")
    data = json.loads(path.read_text())
    rows = [["m", "revdict-dev", f"s{i // 4}", ("mrr", "top1", "top10", "top100")[i % 4], 0.5, 50,
             "2026-01-01 00:00:00"] for i in range(n)]
    data["tables"]["metrics"] = {"columns": ["model_id", "task", "setting", "metric", "value", "n", "created_at"],
                                 "rows": rows}
    path.write_text(json.dumps(data))
    return root


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            root = root_with(n, Path(tmp))
            seconds = []
            for _ in range(3):
                (root / "catalog.duckdb").unlink()
                Catalog._ddl_applied.clear()
                t0 = time.perf_counter()
                counts = rebuild_catalog(root)
                seconds.append(time.perf_counter() - t0)
                assert counts["metrics"] == n and counts["refused"] == 0, counts
            mb = row_record_path(root, "model", "m").stat().st_size / 2**20
            print(f"metrics={n} record_mb={mb:.1f} seconds={statistics.median(seconds):.2f}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [5000, 10000, 20000, 40000])
