"""Table 2's statistic: PST's chosen combination at every step, as mean ± sd over its seeds.

DefSent+ (Liu 2024, Table 2) reports each step (1st, 2nd, 3rd, 3rd-ICA) as the mean ± sd over
its ten runs, and Table 7 encodes STS with one pooling per encoder (Prompt for three of four).
With ``eval.seed_stats: true`` the pipeline (:func:`defsentflow.pipeline.chosen_combination_seeds`)
evaluates every seed's model of the chosen combination at every step with the evaluation's pooling
and every ``eval.also_poolings``; the catalog's ``seed_stats`` view (``sql/090_seed_stats.sql``)
aggregates them, and this section of the run report prints one table per pooling: a row per step,
a column per task, ``mean ± sd``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from defsentflow.eval_tasks import AVERAGE_TASK, AVERAGE_TASKS, EVAL_TASKS, task_parts
from defsentflow.report.leaderboard import format_mean_sd

__all__ = ["seed_stats_rows", "seed_stats_section"]

_ORDER = [*EVAL_TASKS, AVERAGE_TASK]


def seed_stats_rows(rows: Callable[..., list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The run's ``seed_stats`` rows of two or more seeds: step, step_label, ica, pooling, task,
    setting, metric, mean, sd, n, seeds; [] when the run evaluated no seeds."""
    found = rows("SELECT step, step_label, ica, pooling, task, setting, metric, mean, sd, n, seeds FROM seed_stats "
                 "WHERE run_id = $run_id AND n >= 2 ORDER BY step, ica, pooling, task, setting, metric")
    return [dict(r) for r in found]


def _is_average(task: str) -> bool:
    return task.split("+")[0] == AVERAGE_TASK


def _header(task: str, setting: str, metric: str, counts: dict[str, str]) -> str:
    """A column's name; the STS average says the fewest of its seven tasks any seed has ("Avg. (5 of 7
    tasks)": then the cells are empty, as an average of five is not Table 2's Avg., nor a mean over the
    seeds that have all seven)."""
    if _is_average(task) and metric == "spearman":
        variant = task[len(AVERAGE_TASK):]
        return f"Avg.{variant} ({counts.get(task, '0')} of {len(AVERAGE_TASKS)} tasks)"
    return task if metric == "spearman" else f"{task} {setting} {metric}"


def _task_key(task: str) -> tuple:
    base = task.split("+")[0]
    return (_ORDER.index(base) if base in _ORDER else len(_ORDER), task)


def _cell(r: dict[str, Any] | None, seeds: int) -> str:
    """mean ± sd; a figure fewer seeds have than the row's says which ("(seeds 0, 2)"); empty: none."""
    if r is None or r["mean"] is None:
        return ""
    text = format_mean_sd(r["mean"], r["sd"])
    return text if r["n"] == seeds else f"{text} (seeds {', '.join(str(s) for s in r['seeds'])})"


def seed_stats_section(rows: Callable[..., list[dict[str, Any]]], markdown_table: Callable[..., str]) -> list[str]:
    """The run report's "Mean over seeds" section (empty unless ``eval.seed_stats`` evaluated the seeds)."""
    found = seed_stats_rows(rows)
    if not found:
        return []
    win = rows("SELECT winner_step, winner_model_id, reason FROM pst_runs WHERE run_id = $run_id")
    lines = ["## Mean over seeds per step and pooling (DefSent+ Table 2)", "",
             "Every seed of the combination PST chose (step 1's pooling and entry encoding, which later steps keep; "
             "the ICA step's ICA candidates as their own row), evaluated with each reported pooling: mean ± sd "
             "(sample) over the seeds. STS: Spearman x 100; Avg. is each seed's mean over the seven STS tasks of "
             "Table 2 (STS12-16, STS-B test, SICK-R), then its mean over seeds; its header says the fewest of the "
             "seven any seed has, and it stays empty unless every seed has all seven. A figure fewer seeds have "
             "than the row's says which."]
    if win:
        lines += ["", f"The encoder PST returned: step {win[0]['winner_step']} ({win[0]['reason']})."]
    lines.append("")
    for pooling in dict.fromkeys(r["pooling"] for r in found):
        group = [r for r in found if r["pooling"] == pooling]
        fewest: dict[str, float] = {}
        for r in group:
            if _is_average(r["task"]) and r["metric"] == "n":
                fewest[r["task"]] = min(fewest.get(r["task"], r["mean"]), r["mean"])
        counts = {t: f"{v:.3g}" for t, v in fewest.items()}
        figures = sorted({(r["task"], r["setting"], r["metric"]) for r in group
                          if not (_is_average(r["task"]) and r["metric"] == "n")}, key=lambda f: (_task_key(f[0]), f[1:]))
        header = ["step", "seeds", *[_header(t, s, m, counts) for t, s, m in figures]]
        table = []
        for label in dict.fromkeys(r["step_label"] for r in group):
            at = {(r["task"], r["setting"], r["metric"]): r for r in group if r["step_label"] == label}
            n = max(r["n"] for r in at.values())
            table.append([label, n, *(_cell(at.get(f), n) for f in figures)])
        lines += [f"### Pooling: {pooling or 'n/a'}", "", markdown_table(header, table), ""]
        if any(task_parts(t).variant for t, _, _ in figures):
            lines += ["A task with a `+` carries its non-canonical settings in its name (defsentflow/eval_tasks.py).", ""]
    return lines
