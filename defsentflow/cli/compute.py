"""``--dask-address`` and ``--local-workers`` for the commands that fan out (run, sweep, claims, harvest)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["add_compute_flags", "command_cluster", "compute_for"]


def add_compute_flags(p: argparse.ArgumentParser, *, what: str = "PST candidates") -> None:
    p.add_argument("--dask-address", metavar="tcp://HOST:8786",
                   help=f"run the {what} on this existing Dask cluster (workers: the project installed, "
                        "DEFSENTFLOW_WORKER=1; see docs/distributed.md)")
    p.add_argument("--local-workers", type=int, metavar="N",
                   help=f"run the {what} on a LocalCluster of N single-threaded worker processes that this "
                        "command starts and stops (default: the config's compute:, else one at a time here)")


def compute_for(args: argparse.Namespace, default: Any = None):
    """The config's ``compute:`` section overridden by the command's flags."""
    from defsentflow.compute import ComputeSection

    compute = default if isinstance(default, ComputeSection) else ComputeSection.model_validate(default or {})
    update: dict[str, Any] = {}
    if getattr(args, "dask_address", None):
        update.update(address=args.dask_address, local_workers=0)
    elif getattr(args, "local_workers", None) is not None:
        if args.local_workers < 0:
            from defsentflow.cli import UserError

            raise UserError(f"--local-workers must be >= 0, got {args.local_workers}")
        update.update(local_workers=args.local_workers, address=None)
    return compute.model_copy(update=update)


@contextlib.contextmanager
def command_cluster(args: argparse.Namespace, default: Any = None) -> Iterator[str | None]:
    """The command's one Dask cluster (started here for ``--local-workers``), shared by every stage."""
    from defsentflow.tasks.fanout import compute_cluster

    with compute_cluster(compute_for(args, default)) as address:
        yield address
