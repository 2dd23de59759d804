"""Prefect tasks for the run report and entry-space analysis: thin calls into ``defsentflow.report``.

Neither is cached: a report reads the catalog as it is now (new evaluations, new baselines), and
entry-space statistics are cheap next to the training that produced the matrix.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE


@task(name="write-run-report", cache_policy=NO_CACHE)
def write_run_report(run_id: str, out_dir: str | None = None, status: str | None = None) -> dict[str, Any]:
    """Write report.md/report.html for ``run_id`` and publish the Markdown as a Prefect artifact.

    ``status``: what the report shows as the run's status when the caller ends the run right after.
    """
    from prefect.artifacts import create_markdown_artifact

    from defsentflow.report import build_report

    report = build_report(run_id, out_dir=out_dir, status=status)
    # artifact keys allow lowercase letters, digits and dashes only
    key = "report-" + "".join(c if c.isalnum() else "-" for c in run_id.lower())
    note = f"\n\n---\nImages and the HTML version: `{report.dir}`\n"
    create_markdown_artifact(markdown=report.markdown + note, key=key, description=f"Run report of {run_id}")
    return {"dir": str(report.dir), "markdown_path": str(report.markdown_path), "html_path": str(report.html_path),
            "images": list(report.images)}


@task(name="analyse-entry-space", cache_policy=NO_CACHE)
def analyse_entry_space(run_id: str, step: int, matrix_path: str, seed: int | None = None,
                        matrix_key: str | None = None) -> dict[str, Any]:
    """Statistics and scatter plot of one PST step's entry matrix, recorded in ``entry_space_stats``."""
    from defsentflow.report import analyse_entry_matrix
    from defsentflow.storage import Catalog

    return analyse_entry_matrix(matrix_path, run_id=run_id, step=step, seed=seed, matrix_key=matrix_key,
                                catalog=Catalog())
