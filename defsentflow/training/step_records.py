"""The catalog rows of a finished PST step: one ``pst_steps`` row per candidate and the entry-space
statistics of its matrices (read by the ``pst_progress`` view and the report)."""

from __future__ import annotations

import os
from pathlib import Path

from defsentflow.entryspace import record_entry_space_stats
from defsentflow.storage import Catalog
from defsentflow.training.pst_records import StepResult

__all__ = ["record_step"]


def record_step(run_id: str, result: StepResult, *, root: str | os.PathLike | None = None) -> None:
    """Replace this run's ``pst_steps`` rows of one step (one row per candidate)."""
    cat = Catalog(root)
    with cat.transaction() as con:
        con.execute("DELETE FROM pst_steps WHERE run_id = ? AND step = ?", [run_id, result.step])
        for c in result.candidates:
            chosen = c.model_id == result.best.model_id and c.pooling == result.best.pooling
            note = c.score_note if c.step else "untrained encoder (step 0)"
            con.execute(
                "INSERT INTO pst_steps (run_id, step, seed, model_id, selection_metric, selection_score, chosen, "
                "entry_matrix_path, lr, pooling, entry_encoding, use_pooler, note, ica, selection_rule, group_mean) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, c.step, c.seed, c.model_id, c.metric, c.score, chosen,
                 cat.rel(c.entry_matrix_path) if c.entry_matrix_path else None, c.lr,
                 c.pooling, c.entry_encoding, c.use_pooler, note, c.ica, result.rule,
                 result.group_means.get(c.group)],
            )
    _record_entry_space(run_id, result, root)


def _record_entry_space(run_id: str, result: StepResult, root: str | os.PathLike | None) -> None:
    """One ``entry_space_stats`` row per entry matrix of the step (read by the ``pst_progress`` view)."""
    for m in result.entry_matrices:
        if m.stats:
            plot = Path(m.path) / "entry_space.png"
            record_entry_space_stats(run_id, result.step, m.key, m.stats, root=root, matrix_path=m.path,
                                     plot_path=str(plot) if plot.is_file() else None)
