"""Run one stage from the command line: through its Prefect flow (``--prefect``) or in process."""

from __future__ import annotations

import argparse
import importlib
import time
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["run_stage"]


def run_stage(args: argparse.Namespace, *, prefix: str, flow: str, payload: dict,
              local: Callable[[str], Any], use_flow: bool | None = None,
              run_id: str | None = None, runtime: Callable[[], Any] | None = None) -> tuple[Any, str, float]:
    """``(result, run_id, seconds)`` of one stage run.

    Args:
        args: the parsed command line (``run_id`` and ``prefect`` are read).
        prefix: the run id's prefix when ``--run-id`` is not given.
        flow: ``"module:function"`` of the stage's flow, called as ``fn(payload, run_id=...)``
            inside a local Prefect API when ``--prefect`` is given (or ``use_flow`` is true).
        payload: the flow's JSON config.
        local: the in-process library call, given the run id.
        use_flow: overrides ``--prefect`` (e.g. a Dask-backed stage always runs as a flow).
        run_id: a run id chosen by the caller (default: ``--run-id`` or a fresh one).
        runtime: the context the flow runs in (default: a local Prefect API;
            :func:`defsentflow.cli.compute.command_runtime` for a stage that fans out).
    """
    run_id = run_id or args.run_id or f"{prefix}-{uuid.uuid4().hex[:8]}"
    t0 = time.perf_counter()
    if args.prefect if use_flow is None else use_flow:
        from defsentflow.tasks.server import local_api

        module, name = flow.split(":")
        fn = getattr(importlib.import_module(module), name)
        with (runtime or local_api)():
            result = fn(payload, run_id=run_id)
    else:
        result = local(run_id)
    return result, run_id, time.perf_counter() - t0
