"""A Dask worker preload: ``dask worker ADDRESS --preload tasks.preload``.

Imported when a worker starts (the ``LocalCluster`` that ``--local-workers N`` starts passes it
too), it loads what every candidate task needs (torch, transformers, Prefect and the candidate
and selection code) so that the first candidate on each worker does not pay several seconds of
imports on the critical path of a step.
"""

from __future__ import annotations

import prefect  # noqa: F401  (the task wrapper runs every candidate)

import defsentflow.training.candidate  # training, torch, transformers
import defsentflow.training.entry_shards  # noqa: F401  (entry-matrix shards)

__all__: list[str] = []
