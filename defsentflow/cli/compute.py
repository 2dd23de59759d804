"""``--dask-address`` and ``--local-workers`` for the commands that fan out (run, sweep, claims,
harvest), and the runtime those commands run in: their cluster, then their Prefect API."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import ValidationError

__all__ = ["add_compute_flags", "command_runtime", "compute_for", "shared_paths_of"]


def add_compute_flags(p: argparse.ArgumentParser, *, what: str = "PST candidates") -> None:
    p.add_argument("--dask-address", metavar="tcp://HOST:8786", type=_dask_address,
                   help=f"run the {what} on this existing Dask cluster (workers: the project installed, "
                        "DEFSENTFLOW_WORKER=1, --nthreads 1; see docs/distributed.md)")
    p.add_argument("--local-workers", type=int, metavar="N",
                   help=f"run the {what} on a LocalCluster of N single-threaded worker processes that this "
                        "command starts and stops (default: the config's compute:, else one at a time here)")


def _dask_address(text: str) -> str:
    from defsentflow.compute import check_dask_address

    try:
        return check_dask_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
    if not update:
        return compute
    try:  # validated as a config's compute: is (a malformed --dask-address is one line here)
        return ComputeSection.model_validate({**compute.model_dump(), **update})
    except ValidationError as exc:
        from defsentflow.cli import UserError
        from defsentflow.config_tools import format_errors

        flag = "--dask-address" if "address" in update and update["address"] else "--local-workers"
        raise UserError(f"{flag}: {format_errors(exc)}") from None


def shared_paths_of(configs: Iterable[Any]) -> dict[str, str]:
    """What the workers must see for every config of a command (a sweep's points, the claims' arms)."""
    from defsentflow.compute import shared_paths
    from defsentflow.storage import data_root

    paths: dict[str, str] = {}
    for i, cfg in enumerate(configs):
        for label, path in shared_paths(cfg, data_root()).items():
            if paths.get(label, path) != path:
                label = f"{label} #{i + 1}"
            paths[label] = path
    return paths


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the command as Ctrl-C does (a flow run turns it into Prefect's own signal)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def command_runtime(compute: Any, needs: Mapping[str, str] | None = None) -> Iterator[str | None]:
    """The command's one Dask cluster (started here for ``--local-workers``, attached and checked for
    an address), then its Prefect API on an address the workers reach (``PREFECT_API_URL`` when
    set). Yields the cluster's address (None: sequential). Ctrl-C or SIGTERM cancels the command's
    queued tasks and stops its running candidates at their next checkpoint."""
    from defsentflow.tasks.cluster import api_host, cancel_command, check_api, compute_cluster
    from defsentflow.tasks.server import local_api

    try:
        with _sigterm_as_interrupt(), compute_cluster(compute, needs) as address, \
                local_api(host=api_host(address)) as url:
            check_api(address, url)
            try:
                yield address
            except BaseException:
                cancel_command(address)  # while the API is up: the stopped candidates' states reach it
                raise
    except BaseException as exc:
        if type(exc).__name__ == "TerminationSignal":  # Prefect's SIGTERM inside a flow run: an interrupt here
            raise KeyboardInterrupt("SIGTERM") from None
        raise
