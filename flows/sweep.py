"""The ``sweep`` flow: expand a sweep file and run the pipeline flow once per point.

Points share every cached stage the pipeline has (dictionary ingestion, untrained scores and
evaluations, entry matrices); a point that completed with the same config is skipped, so a
killed sweep resumes where it stopped (see :mod:`defsentflow.sweep`). On a Dask cluster the
points run side by side (:func:`defsentflow.tasks.fanout.points_fan_out`), their candidates on
the workers; without one, one after another. Ends by writing the sweep's table (Markdown and a
PNG chart).
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.compute import compute_from_env
from defsentflow.flows.pipeline import pipeline
from defsentflow.report.sweep_report import write_sweep_report as write
from defsentflow.sweep import load_sweep, run_sweep
from defsentflow.tasks.cluster import compute_cluster
from defsentflow.tasks.fanout import points_fan_out
from defsentflow.tasks.step import step_task


def _write_sweep_report(name: str) -> dict[str, str]:
    out = write(name)
    return {"markdown_path": str(out.markdown_path), "chart_path": str(out.chart_path) if out.chart_path else ""}


write_sweep_report = step_task(_write_sweep_report, "sweep-report")


@flow(name="sweep", log_prints=True)
def sweep_flow(sweep_path: str, only: list[str] | None = None, force: bool = False,
               fail_fast: bool = False, max_points: int | None = None) -> dict[str, Any]:
    """Run every point of ``sweep_path`` (or the ``only`` ones) through the pipeline flow
    (``max_points``: the cap on the sweep's points, default :data:`~defsentflow.sweep.MAX_SWEEP_POINTS`)."""
    sweep = load_sweep(sweep_path, **({"max_points": max_points} if max_points else {}))

    def run_point(point: Any, config_path: str, run_id: str) -> dict[str, Any]:
        print(f"sweep {sweep.name}: point {point.position}/{len(sweep.points)} {point.point_id} ({point.label})")
        return pipeline(config_path, run_id=run_id)

    with compute_cluster(compute_from_env()):  # the command's cluster, or the deployment's address
        outcome = run_sweep(sweep, run_point, only=only, force=force, fail_fast=fail_fast, fan_out=points_fan_out())
    report = write_sweep_report(sweep.name)
    print(f"sweep {sweep.name}: {len(outcome.ran)} ran, {len(outcome.skipped)} already done, "
          f"{len(outcome.failed)} failed; table: {report['markdown_path']}")
    return {"sweep": sweep.name, "ran": outcome.ran, "skipped": outcome.skipped, "failed": outcome.failed,
            "report": report, "seconds": round(outcome.seconds, 1)}
