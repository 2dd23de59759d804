"""The Prefect task for the run report: a thin call into ``defsentflow.report``.

Not cached: a report reads the catalog as it is now (new evaluations, new baselines).
"""

from __future__ import annotations

from typing import Any

from defsentflow.report import build_report
from defsentflow.report.markup import inline_images
from defsentflow.tasks.retries import IO_RETRIES
from defsentflow.tasks.step import step_task


def _write_run_report(run_id: str, out_dir: str | None = None, status: str | None = None) -> dict[str, Any]:
    """Write report.md/report.html for ``run_id`` and publish the Markdown as a Prefect artifact.

    ``status``: what the report shows as the run's status when the caller ends the run right after.
    """
    from prefect.artifacts import create_markdown_artifact  # lazy: Prefect loads only where a flow or task runs

    report = build_report(run_id, out_dir=out_dir, status=status)
    # artifact keys allow lowercase letters, digits and dashes only
    key = "report-" + "".join(c if c.isalnum() else "-" for c in run_id.lower())
    note = f"\n\n---\nThe report's folder (HTML version, images): `{report.dir}`\n"
    # the UI has no access to the report's folder: its images travel inside the Markdown
    create_markdown_artifact(markdown=inline_images(report.markdown, report.dir) + note, key=key,
                             description=f"Run report of {run_id}")
    return {"dir": str(report.dir), "markdown_path": str(report.markdown_path), "html_path": str(report.html_path),
            "images": list(report.images)}


write_run_report = step_task(_write_run_report, "write-run-report", retries=IO_RETRIES)
