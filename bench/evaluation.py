"""STS evaluation benchmark: one model on STS12-16 + STS-B dev, wall time as the median of N runs.

    python bench/evaluation.py [--model minilm] [--pooling mean] [--tasks ...] [--repeats 3]
                               [--data-dir ../shared/data] [--autocast none] [--threads N]

Each repeat is a full :func:`defsentflow.evaluation.evaluate_sts` call (loading the task files,
encoding every sentence of every task in one pass, scoring) without the embedding cache; the model
is loaded once, outside the timing, as the CLI's total also includes a load of about a second. The
output lists each repeat's seconds and CPU seconds (the CPU time shows how much a busy machine
stretched the wall time), the scores of the last repeat, and a last line
``median_s=<seconds> target_s=180 ok=<yes|no>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TASKS = "sts12,sts13,sts14,sts15,sts16,stsb-dev"
TARGET_S = 180.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--pooling", default="mean")
    ap.add_argument("--tasks", default=DEFAULT_TASKS)
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--autocast", default="none", choices=["none", "bf16", "fp16"])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's choice)")
    args = ap.parse_args(argv)
    if not Path(args.data_dir).is_dir():
        print(f"data directory not found: {args.data_dir}", file=sys.stderr)
        return 2
    os.environ.setdefault("DEFSENTFLOW_QUIET", "1")
    import torch

    from defsentflow.encoders import load_encoder
    from defsentflow.evaluation import average_row, evaluate_sts

    if args.threads:
        torch.set_num_threads(args.threads)
    enc = load_encoder(args.model, device=args.device)
    print(f"model={args.model} pooling={args.pooling} device={enc.device} threads={torch.get_num_threads()} "
          f"tasks={args.tasks}")
    times, rows = [], []
    for i in range(args.repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        rows = evaluate_sts(enc, args.tasks, data_dir=args.data_dir, pooling=args.pooling,
                            batch_size=args.batch_size, autocast=args.autocast)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        times.append(wall)
        print(f"repeat {i + 1}: {wall:.1f}s wall, {cpu:.1f}s cpu")
    for r in rows:
        print(f"  {r['task']:<10} {r['setting']:<5} {r['value']:6.2f}  n={r['n']}")
    avg = average_row(rows)
    if avg:
        print(f"  {avg['label']}: {avg['value']:.2f}")
    med = statistics.median(times)
    print(f"median_s={med:.1f} target_s={TARGET_S:.0f} ok={'yes' if med <= TARGET_S else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
