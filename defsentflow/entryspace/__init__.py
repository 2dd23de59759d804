"""Entry-space diagnostics of the DefSent+ entry matrix: isotropy statistics, pictures and their
catalog rows. Below both ``training`` (PST records them per step) and ``report`` (which shows them)."""

from defsentflow.entryspace.figures import plot_entry_space, svd_2d, whitened_pca_2d
from defsentflow.entryspace.isotropy import entry_space_stats
from defsentflow.entryspace.records import STATS_COLUMNS, entry_plot_path, record_entry_space_stats

__all__ = ["STATS_COLUMNS", "entry_plot_path", "entry_space_stats", "plot_entry_space", "record_entry_space_stats",
           "svd_2d", "whitened_pca_2d"]
