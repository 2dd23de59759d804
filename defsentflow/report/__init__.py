"""Entry-space statistics, plots and the run report."""

from __future__ import annotations

from defsentflow.entryspace.isotropy import (
    avg_cosine,
    effective_rank,
    entry_space_stats,
    isoscore,
    isoscore_from_variances,
    partition_isotropy,
    pca_variances,
    top1_var_share,
)
from defsentflow.report.claims_report import claims_section, claims_table, plot_claims
from defsentflow.report.entry_space import analyse_entry_matrix, entry_plot_path, record_entry_space_stats
from defsentflow.report.leaderboard import Leaderboard, format_number, load_leaderboard, selection_column
from defsentflow.report.plots import plot_entry_space, plot_label_histogram, plot_pst_progress, plot_scores
from defsentflow.report.run_report import RunReport, build_report, markdown_table, report_dir

__all__ = [
    "Leaderboard",
    "RunReport",
    "analyse_entry_matrix",
    "avg_cosine",
    "build_report",
    "claims_section",
    "claims_table",
    "effective_rank",
    "entry_plot_path",
    "entry_space_stats",
    "format_number",
    "isoscore",
    "isoscore_from_variances",
    "load_leaderboard",
    "markdown_table",
    "partition_isotropy",
    "pca_variances",
    "plot_claims",
    "plot_entry_space",
    "plot_label_histogram",
    "plot_pst_progress",
    "plot_scores",
    "record_entry_space_stats",
    "report_dir",
    "selection_column",
    "top1_var_share",
]
