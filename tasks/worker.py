"""What a command installs on every Dask worker it attaches to (and on workers that join later).

prefect-dask ships the flow's settings (its ``PREFECT_API_URL`` among them) with every task, but a
worker process keeps ONE Prefect events worker, made with the API URL of the first task it ran.
Prefect 3 records task runs through events, so on long-lived workers every later command's task
runs went to the first command's (long gone) API. :class:`PerApiEvents` keys the events worker by
API URL instead: each task's states and events reach the API of the command that submitted it.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin
from prefect._internal.concurrency.services import QueueService
from prefect.events.clients import PrefectEventsClient
from prefect.events.worker import EventsWorker, emit_events_to_cloud, should_emit_events_to_running_server
from prefect.settings import PREFECT_API_URL

__all__ = ["PerApiEvents", "per_api_events"]


def per_api_events() -> None:
    """Make ``EventsWorker.instance()`` one worker per API URL (idempotent; this process only)."""
    if getattr(EventsWorker, "_defsentflow_per_api", False):
        return
    original = EventsWorker.__dict__["instance"].__func__

    def instance(cls: Any, client_type: Any = None) -> Any:
        if (client_type is None and cls._client_override is None and not emit_events_to_cloud()
                and should_emit_events_to_running_server()):
            return QueueService.instance.__func__(cls, PrefectEventsClient, (("api_url", PREFECT_API_URL.value()),))
        return original(cls, client_type)

    EventsWorker.instance = classmethod(instance)  # type: ignore[method-assign]
    EventsWorker._defsentflow_per_api = True  # type: ignore[attr-defined]


class PerApiEvents(WorkerPlugin):
    """The worker plugin a command registers when it attaches: :func:`per_api_events` on each worker."""

    name = "defsentflow-per-api-events"

    def setup(self, worker: Any) -> None:
        per_api_events()
