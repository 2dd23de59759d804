"""The one way a library step becomes a Prefect task: its name, retries and tags, nothing else.

Reuse is decided by the library's content keys (an artifact that exists is found by its key), so
a step task carries no Prefect cache and persists no result; retries come from
:mod:`defsentflow.tasks.retries` (a transient failure is retried, bad input is not).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

__all__ = ["step_task"]


def step_task(fn: Callable[..., Any], name: str, *, retries: Mapping[str, Any] | None = None,
              tags: Sequence[str] = ()) -> Any:
    """``fn`` as a Prefect task named ``name`` (kebab-case, as the flows name them), with the retry
    settings ``retries`` (e.g. :data:`~defsentflow.tasks.retries.TRAIN_RETRIES`) and ``tags``."""
    return task(name=name, tags=list(tags), cache_policy=NO_CACHE, persist_result=False, **dict(retries or {}))(fn)
