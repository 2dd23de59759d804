"""``defsentflow leaderboard`` in 120 columns: the figure rows are sorted by first, then the reported
ones, grouped under short headings; one number format per metric; everything with ``--wide``."""

from __future__ import annotations

from defsentflow.cli.board import board_lines
from defsentflow.report.leaderboard import Leaderboard


def _board(n_modes: int = 3) -> Leaderboard:
    modes = ("cosine", "head", "hybrid", "a", "b", "c")[:n_modes]
    dev = ["stsb_dev_spearman", *(f"revdict_dev_unseen_q500_splitcands_{m}_mrr" for m in modes)]
    test = ["sts12_test_spearman", "sts13_test_spearman", "sickr_trial_spearman",
            *(f"revdict_test_unseen_q500_splitcands_{m}_mrr" for m in modes)]
    columns = (*dev, *test)
    rows = []
    for i, mid in enumerate(("pst-demo-1a2b3c4d", "base:all-MiniLM-L6-v2")):
        row = {"model_id": mid, "pooling": "mean", "method": ("pst", "base")[i], "aliases": [mid, f"other-{i}"]}
        row.update({c: (86.8 - i if c.endswith("spearman") else 0.56 - i / 10) for c in columns})
        row["stsb_dev_spearman_sd"] = 0.4
        rows.append(row)
    return Leaderboard(columns, tuple(rows), "stsb_dev_spearman", "sorted by stsb_dev_spearman",
                       {c: ("dev" if c in dev else "test") for c in columns})


def test_the_default_fits_120_columns_sort_figure_first_then_reported_figures():
    board = _board(n_modes=6)
    lines = board_lines(board)
    assert max(len(line) for line in lines) <= 120
    assert lines[0].split()[0] == "stsb" and lines[1].split()[2] == "dev"  # the sort figure first
    assert "86.80 ± 0.40" in lines[3] and lines[3].split()[-1] == "0.5600"  # not 0.56: one format per metric
    assert "revdict test" in lines[0] and "sts12" in lines[0]  # reported figures before other dev ones
    assert lines[-1].startswith("6 more figures; ") and lines[-1].endswith("defsentflow leaderboard --wide")
    assert "revdict: unseen q500 splitcands mrr" in lines[-2] and "pooling: mean" in lines[-2]


def test_wide_shows_every_figure_by_its_full_name_and_the_other_ids():
    board = _board()
    lines = board_lines(board, wide=True)
    assert lines[0].split() == ["model_id", "pooling", "method", *board.columns, "also_known_as"]
    assert lines[2].split()[-1] == "other-0" and "0.5600" in lines[2] and "86.80 ± 0.40" in lines[2]


def test_an_sd_filed_as_its_own_metric_stands_beside_its_mean():
    columns = ("bbc_test_topics_acc", "bbc_test_topics_acc_sd")
    row = {"model_id": "m", "pooling": "mean", "method": "base", "aliases": ["m"],
           "bbc_test_topics_acc": 87.15, "bbc_test_topics_acc_sd": 0.34}
    lines = board_lines(Leaderboard(columns, (row,), None, "", {c: "test" for c in columns}))
    assert lines[3].split()[-3:] == ["87.15", "±", "0.34"] and "more figure" not in lines[-1]
