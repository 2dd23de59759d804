"""Retry settings for Prefect tasks: transient failures (a locked catalog, a full or busy disk, a
worker lost mid-batch) are retried after a delay; input errors are not.

Every stage is safe to repeat: artifacts are content-addressed and written atomically, a harvest
batch whose Parquet part exists is skipped, and a killed training resumes from its checkpoint.
"""

from __future__ import annotations

from typing import Any

from defsentflow.fanout import CandidateStoppedError, GpuMissingError

__all__ = ["IO_RETRIES", "TRAIN_RETRIES", "transient"]

# Exceptions that mean "the input is wrong" (the same call would fail again), a call stopped because
# its command was cancelled, a call that asked for a GPU on a worker without one.
_PERMANENT = (ValueError, KeyError, TypeError, LookupError, FileNotFoundError, PermissionError, NotImplementedError,
              CandidateStoppedError, GpuMissingError)


def transient(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry unless the task failed on bad input (ValueError & co.)."""
    try:
        exc = state.result(raise_on_failure=False)
    except Exception:  # the result could not be read: assume transient
        return True
    return not isinstance(exc, _PERMANENT)


# Reading and writing files and the catalog; harvest batches (a lost worker, a locked catalog).
IO_RETRIES: dict[str, Any] = {"retries": 2, "retry_delay_seconds": [5, 30], "retry_jitter_factor": 0.5,
                              "retry_condition_fn": transient}
# Training: once, resuming from the checkpoint the failed attempt left.
TRAIN_RETRIES: dict[str, Any] = {"retries": 1, "retry_delay_seconds": 30, "retry_condition_fn": transient}
