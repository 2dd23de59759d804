"""The kinds of evaluation task: one module each, gathered here (as mteb gathers its tasks).

A kind declares, in its own module, everything that was branched on elsewhere: the registry tasks
it runs (:meth:`TaskKind.tasks`), whether its data is available for a data folder
(:meth:`TaskKind.available`), whether it reads the data folder (``reads_data_dir``), whether a
run's extra poolings score it too (``extra_poolings``), whether a head given to it changes its
figures (``uses_head``), the content of each task's inputs
(:meth:`TaskKind.inputs`), the settings besides the name that a figure depends on
(:meth:`TaskKind.settings`) and its run (:meth:`TaskKind.run`). The one figure path
(:mod:`defsentflow.evaluation.figures`) keys, stores and writes what a kind computes; nothing else
names a kind.

How to add a kind (two library files, three with a new reader):

1. Declare its tasks in the registry, :data:`defsentflow.eval_tasks.TASKS` (a ``TaskMetadata`` row:
   name, kind, splits, main metric; add the kind's name to ``TaskMetadata.kind``'s ``Literal``).
2. Add a module here, ``defsentflow/evaluation/kinds/<kind>.py``, that defines ``KIND``: an object
   with the attributes and methods of :class:`TaskKind` (see :mod:`.sts` for a kind that reads
   the data folder, :mod:`.wordpred` for one that reads a dictionary). It is found by its module
   name; no list elsewhere names it.
3. When it reads a new file format, put the reader in its own module (``evaluation/<kind>_data.py``).

Example:
    >>> cfg = EvalConfig(tasks="stsb-dev,wordpred", dictionary="sample")
    >>> [k.name for k in kinds_for(cfg)]
    ['sts', 'wordpred']
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Protocol

import pyarrow as pa

from defsentflow.eval_tasks import TASKS

__all__ = ["KINDS", "TaskKind", "kind_of", "kinds_for"]


class TaskKind(Protocol):
    """What the figure path asks of a kind of task."""

    name: str
    reads_data_dir: bool        # its files lie in the evaluation data folder (``eval.data_dir``)
    extra_poolings: bool        # a run's ``also_poolings`` / baseline poolings score it too
    uses_head: bool             # its figures depend on the head it is given (a run's, for a baseline)

    def serves(self, meta: Any) -> bool:
        """Whether it runs the registry task ``meta`` (a :class:`~defsentflow.eval_tasks.TaskMetadata`)."""

    def tasks(self, config: Any) -> tuple[str, ...]:
        """The config's requested tasks of this kind that it runs (none: skipped)."""

    def available(self, task: str, data_dir: str | None) -> Any:
        """The task's :class:`~defsentflow.evaluation.task_status.TaskStatus` for ``data_dir``."""

    def inputs(self, task: str, config: Any) -> str:
        """One string naming the content of what ``task`` reads (a file's hash, a dataset's key)."""

    def settings(self, task: str, config: Any) -> dict[str, Any]:
        """The settings of ``config`` that change ``task``'s figures (its name carries them)."""

    def owner(self, row_task: str, tasks: tuple[str, ...]) -> str:
        """The requested task a metric row (its recorded ``task``) belongs to."""

    def run(self, model: str, config: Any, tasks: tuple[str, ...], pooling: str, *, table: pa.Table | None = None,
            root: str | None = None, head: Any = None) -> list[dict[str, Any]]:
        """Metric rows ``{task, setting, metric, value, n, n_excluded, pooling}`` of ``tasks``. A
        dictionary kind reads ``table`` when given (a worker reads the dictionary folder, not the
        catalog); ``head``: the head its head figures are scored with (None: the model's own)."""


def _gather() -> dict[str, TaskKind]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        kind = getattr(importlib.import_module(f"{__name__}.{info.name}"), "KIND", None)
        if kind is not None:
            found[kind.name] = kind
    return found


KINDS: dict[str, TaskKind] = _gather()


def kind_of(task: str) -> TaskKind | None:
    """The kind that runs registry task ``task`` (None: an unknown task)."""
    meta = TASKS.get(task)
    return next((k for k in KINDS.values() if meta is not None and k.serves(meta)), None)


def kinds_for(config: Any) -> list[TaskKind]:
    """The kinds that run some of ``config.tasks``, in the registry's order of kinds."""
    order = sorted(KINDS.values(), key=lambda k: min((i for i, t in enumerate(TASKS) if kind_of(t) is k), default=99))
    return [k for k in order if k.tasks(config)]
