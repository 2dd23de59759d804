"""The run report: ``<data root>/reports/<run_id>/report.md`` and ``report.html`` with its PNGs.

Results first: what was trained, the selected model and where it is, its headline figures
against the untrained encoder with deltas and their chart (:mod:`defsentflow.report.summary`);
then every model of the run beside the baselines, PST progress with one entry-space plot per
step, harvested-label histograms, lineage (stages computed or cached, artifacts with their hashes
and inputs), and the configuration last. Images sit in ``img/`` next to the two files and are
linked by relative paths, so the folder can be moved or served as is. A chart is drawn only when
there are figures for it.

The folder is built under a temporary name and swapped into place, so a reader never sees half a
report. Only catalog reads happen, except that a PST step whose entry matrix has no statistics
yet is analysed (and recorded) when ``analyse_missing`` is set.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from defsentflow.model import matrix_folder, record_of
from defsentflow.report.claims_report import claims_section
from defsentflow.report.entry_space import analyse_entry_matrix
from defsentflow.report.label_quality import label_quality_section
from defsentflow.report.leaderboard import Leaderboard, format_number, load_leaderboard
from defsentflow.report.markup import Markdown, escape_html, md_code, md_text, render_html
from defsentflow.report.plots import plot_label_histogram, plot_loss_curves, plot_pst_progress
from defsentflow.report.seed_stats import seed_stats_section
from defsentflow.report.summary import run_facts, summary_section
from defsentflow.storage import Catalog, check_identifier, data_root, hash_path, root_place
from defsentflow.storage.outputs import output_dir

__all__ = ["RunReport", "build_report", "markdown_table", "report_dir"]

# Roles of models in a run's report: its own (registered by it, PST candidates of it, evaluated in
# it); models no run produced are baselines; other runs' models stay out.
_ROLES_SQL = """
SELECT model_id, 'selected (this run)' AS role, 0 AS prio FROM pst_runs WHERE run_id = $run_id
UNION ALL SELECT winner_model_id, 'selected (this run)', 0 FROM pst_runs WHERE run_id = $run_id
UNION ALL SELECT model_id, 'this run', 1 FROM models WHERE run_id = $run_id
UNION ALL SELECT model_id, 'untrained (PST step 0)', 2 FROM pst_steps WHERE run_id = $run_id AND step = 0
UNION ALL SELECT model_id, 'PST candidate', 3 FROM pst_steps WHERE run_id = $run_id AND step > 0
UNION ALL SELECT model_id, 'evaluated in this run', 4 FROM metrics WHERE run_id = $run_id
"""


@dataclass(frozen=True)
class RunReport:
    """Where a report was written and what it contains."""

    run_id: str
    dir: Path
    markdown_path: Path
    html_path: Path
    images: tuple[str, ...]  # relative to ``dir``
    markdown: str


def report_dir(run_id: str, root: str | os.PathLike | None = None) -> Path:
    """``<data root>/reports/<run_id>``."""
    return root_place(data_root(root), "reports", check_identifier(run_id, "run id"))


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, (int, float)):
        return format_number(v)
    return v if isinstance(v, Markdown) else md_text(v)


_SIGNED = re.compile(r"^[+-]\d")  # a delta such as '+0.10': right-aligned like the numbers


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub/CommonMark table; cells are escaped (:func:`~defsentflow.report.markup.md_text`)
    unless they are :class:`~defsentflow.report.markup.Markdown` already."""
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) or bool(_SIGNED.match(str(v)))  # noqa: E731
    numeric = [bool(rows) and all(num(r[i]) or r[i] in (None, "") for r in rows) and any(num(r[i]) for r in rows)
               for i in range(len(columns))]
    out = ["| " + " | ".join(_cell(c) for c in columns) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    out += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def _short(v: Any, n: int = 12) -> str:
    return "" if v is None else str(v)[:n]


class _Ctx:
    """Catalog access for one report: queries that tolerate a missing optional table."""

    def __init__(self, catalog: Any, run_id: str, out: Path):
        self.cat, self.run_id, self.out = catalog, run_id, out
        self.images: list[str] = []

    def rows(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        import duckdb  # lazy: duckdb loads only where it is used

        try:
            return self.cat.query(sql, {"run_id": self.run_id, **params} if "$run_id" in sql else params or None)
        except duckdb.CatalogException:
            return []  # a table of a stage this project copy does not have

    def image(self, rel: str) -> Path:
        self.images.append(rel)
        p = self.out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p


def _config_yaml(run: dict[str, Any]) -> str | None:
    """The run's config as YAML (as a person wrote it), or None."""
    import yaml  # lazy: YAML loads only where a file is read

    config = run.get("config")
    if not config:
        return None
    try:
        data = json.loads(config) if isinstance(config, str) else config
    except (TypeError, ValueError):
        return str(config)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False).rstrip()


def _section_config(run: dict[str, Any], text: str | None) -> list[str]:
    """The Markdown's last section (the HTML page has it as a collapsible block instead)."""
    if text is None:
        return []
    fence = "~~~~" if "```" in text else "```"
    return ["## Configuration", "", f"Config hash {md_code(_short(run.get('config_hash'), 16))}.", "",
            f"{fence}yaml", text, fence, ""]


def _details_config(run: dict[str, Any], text: str | None) -> str:
    if text is None:
        return ""
    return (f'<details class="config">\n<summary>Configuration (config hash '
            f'<code>{escape_html(_short(run.get("config_hash"), 16))}</code>)</summary>\n'
            f'<pre><code class="language-yaml">{escape_html(text)}</code></pre>\n</details>\n')


def _section_tasks(ctx: _Ctx) -> list[str]:
    """Every evaluation task the run was asked for and what became of it (the ``run_tasks`` table,
    where this catalog has it): evaluated, evaluated on a fallback file, or skipped with the reason."""
    rows = ctx.rows("SELECT * FROM run_tasks WHERE run_id = $run_id")
    if not rows:
        return []
    cols = [c for c in ("task", "status", "reason") if c in rows[0]]
    return ["## Requested tasks", "", markdown_table(cols, [[r.get(c) for c in cols] for r in rows]), ""]


def _section_lineage(ctx: _Ctx) -> list[str]:
    lines = ["## Lineage", "", "### Stages", ""]
    stages = ctx.rows("SELECT stage, status, seconds, cache_key, started_at, note FROM stages "
                      "WHERE run_id = $run_id ORDER BY started_at, stage")
    if stages:
        n_cached = sum(1 for s in stages if s["status"] == "cached")
        lines += [f"{len(stages)} stage records, {n_cached} taken from the cache.", "",
                  markdown_table(["stage", "status", "seconds", "cache key", "note"],
                                 [[s["stage"], "cached" if s["status"] == "cached" else s["status"],
                                   s["seconds"], _short(s["cache_key"], 16), s["note"]] for s in stages]), ""]
    else:
        lines += ["No stages recorded for this run.", ""]
    lines += ["### Artifacts", ""]
    arts = ctx.rows("SELECT kind, name, artifact_key, content_hash, path, input_hashes FROM artifacts "
                    "WHERE run_id = $run_id ORDER BY created_at, kind, name")
    if arts:
        rows = []
        for a in arts:
            inputs = a["input_hashes"]
            if isinstance(inputs, str):
                try:
                    inputs = json.loads(inputs)
                except ValueError:
                    pass
            inp = ", ".join(f"{k}:{_short(v, 8)}" for k, v in inputs.items()) if isinstance(inputs, dict) else _cell(inputs)
            rows.append([a["kind"], a["name"], _short(a["artifact_key"], 16), _short(a["content_hash"], 16), inp,
                         md_code(a["path"])])
        lines += [markdown_table(["kind", "name", "key", "content hash", "inputs", "path"], rows), ""]
    else:
        lines += ["No artifacts registered by this run.", ""]
    return lines


def _section_models(ctx: _Ctx, board: Leaderboard) -> list[str]:
    """The run's models and the baselines, one row per model, ranked by the run's selection figure."""
    lines = ["## All models of this run and the baselines", ""]
    roles: dict[str, tuple[int, str]] = {}
    for r in ctx.rows(_ROLES_SQL):
        if r["model_id"] and (r["model_id"] not in roles or r["prio"] < roles[r["model_id"]][0]):
            roles[r["model_id"]] = (r["prio"], r["role"])
    # trained by some run (a candidate's models row may carry no run id); a baseline is anything else
    produced = {r["model_id"] for r in ctx.rows(
        "SELECT model_id FROM models WHERE run_id IS NOT NULL OR coalesce(method, 'base') <> 'base' "
        "UNION SELECT model_id FROM pst_steps WHERE step > 0")}
    keep = []
    for row in board.rows:
        own = sorted(roles[a] for a in row["aliases"] if a in roles)
        baseline = not produced & set(row["aliases"])
        if baseline and row.get("pooling") == "sbert_wk":
            row["role"] = "baseline (SBERT-WK)"  # the untrained encoder with SBERT-WK pooling
        elif own:
            row["role"] = own[0][1]
        elif baseline:
            row["role"] = "baseline"
        else:
            continue  # another run's model
        keep.append(row["model_id"])
    board = board.restrict(keep, gone=roles)  # this run's gone models named, no other run's
    if not board.rows:
        return lines + ["No evaluation results for this run's models or any baseline yet "
                        "(`defsentflow eval MODEL --tasks ...`).", ""]
    cols, rows = board.table(extra=("role",))
    lines += [f"One row per model (its other ids in the last column); {board.sort_note}.", "",
              markdown_table(cols, rows), ""]
    return lines


def _section_pst(ctx: _Ctx, analyse_missing: bool) -> list[str]:
    steps = ctx.rows("SELECT * FROM pst_progress WHERE run_id = $run_id")
    if not steps:
        return []
    lines = ["## PST progress", ""]
    summary = ctx.rows("SELECT * FROM pst_runs WHERE run_id = $run_id")
    if summary:
        s = summary[0]
        lines += [f"Returned: step {md_text(s.get('winner_step'))} ({md_code(s.get('winner_model_id'))}), "
                  f"{md_text(s.get('selection_metric'))} = {_cell(s.get('selection_score'))}. "
                  "*chosen*: the candidate the run returned; *step best*: the best candidate of each step.", ""]
    if analyse_missing:
        done = set()
        for r in steps:
            path = r.get("entry_matrix_path")
            if r.get("matrix_key") is None and path and Path(matrix_folder(path)).is_dir() and (r["step"], path) not in done:
                done.add((r["step"], path))
                analyse_entry_matrix(path, run_id=ctx.run_id, step=r["step"], seed=r.get("seed"), catalog=ctx.cat)
        if done:
            steps = ctx.rows("SELECT * FROM pst_progress WHERE run_id = $run_id")
    cols = ["step", "seed", "model_id", "chosen", "step_best", "selection_metric", "selection_score", "lr", "n_entries",
            "avg_cosine", "top1_var_share", "isoscore", "partition_isotropy", "stsb_dev"]
    lines += [markdown_table(cols, [[r.get(c) for c in cols] for r in steps]), ""]
    if any(r.get("selection_score") is not None for r in steps):
        plot_pst_progress(steps, ctx.image("img/pst_progress.png"))
        lines += ["![Selection score per PST step](img/pst_progress.png)", ""]
    curves = {f"step {r['step']} seed {r.get('seed')}: {r['model_id']}": loss
              for r in steps if r["step"] >= 1
              for path in [next((m["path"] for m in ctx.rows("SELECT path FROM models WHERE model_id = $m",
                                                             m=r["model_id"])), None)]
              for loss in [record_of(path).losses if path else None] if loss}
    if curves:
        plot_loss_curves(curves, ctx.image("img/loss_curves.png"))
        lines += ["### Training loss", "", "![Training loss of every candidate](img/loss_curves.png)", ""]
    lines += ["### Entry space per step", "",
              "Left: the entry matrix on its top two singular directions (uncentred: an anisotropic space "
              "sits far from the origin). Right: the first two principal components, whitened.", ""]
    seen = set()
    for r in steps:
        src = r.get("plot_path")
        if not src or not Path(src).is_file() or src in seen:
            continue
        seen.add(src)
        rel = f"img/entry_space/step-{int(r['step']):02d}-{len(seen)}.png"  # source names repeat across steps
        shutil.copyfile(src, ctx.image(rel))
        label = f"step {r['step']}" + ("" if r.get("seed") is None else f", seed {r['seed']}")
        lines += [f"#### {label}", "", f"![Entry space, {label}]({rel})", ""]
    if not seen:
        lines += ["No entry-space plots (no entry matrix files recorded for this run).", ""]
    return lines


def _section_harvest(ctx: _Ctx) -> list[str]:
    rows = ctx.rows("SELECT h.*, a.path AS pairs_path FROM harvest_stats AS h "
                    "LEFT JOIN artifacts AS a USING (artifact_key) WHERE h.run_id = $run_id ORDER BY h.created_at")
    if not rows:
        return []
    lines = ["## Harvested pairs", ""]
    table = []
    for r in rows:
        q = r.get("quantiles")
        q = json.loads(q) if isinstance(q, str) else (q or {})
        table.append([r.get("corpus"), r.get("n_pairs"), r.get("n_neighbour"), r.get("n_random"), r.get("mean"),
                      r.get("std"), q.get("q05"), q.get("q50"), q.get("q95"), _short(r["artifact_key"], 16)])
    lines += [markdown_table(["corpus", "pairs", "neighbour", "random", "mean", "std", "q05", "median", "q95", "key"],
                             table), ""]
    for i, r in enumerate(rows):
        rel = f"img/labels-{i + 1}.png"
        title = f"labels: {r.get('corpus') or r['artifact_key'][:12]}"
        path = r.get("pairs_path")
        if path and Path(path).is_file():
            import pyarrow.parquet as pq  # lazy: pyarrow loads only where it is used

            t = pq.read_table(path, columns=["score", "kind"])
            scores = t.column("score").to_numpy(zero_copy_only=False)
            kinds = np.asarray(t.column("kind").to_pylist(), dtype=object)
            groups = {k: scores[kinds == k] for k in sorted(set(kinds.tolist()))}
            plot_label_histogram(ctx.image(rel), values=groups, title=title)
        else:
            hist = r.get("histogram")
            hist = json.loads(hist) if isinstance(hist, str) else hist
            if not hist or "edges" not in hist or "counts" not in hist:
                continue
            plot_label_histogram(ctx.image(rel), edges=hist["edges"], counts=hist["counts"], title=title)
        lines += [f"![Label histogram, {title}]({rel})", ""]
    return lines


_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #222; line-height: 1.45; }}
.table-box {{ max-width: 100%; overflow-x: auto; margin: 0.5rem 0 1rem; }}
table {{ border-collapse: collapse; font-size: 0.85rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; }}
th {{ background: #f3f3f3; }}
td {{ font-variant-numeric: tabular-nums; white-space: nowrap; }}
img {{ max-width: 100%; height: auto; }}
pre {{ background: #f6f8fa; padding: 0.75rem; overflow-x: auto; font-size: 0.8rem; }}
code {{ font-size: 0.85em; }}
details.config {{ margin-top: 2rem; }}
details.config summary {{ cursor: pointer; font-weight: 600; }}
</style>
</head>
<body>
{body}
{config}</body>
</html>
"""


def build_report(run_id: str, *, out_dir: str | os.PathLike | None = None, catalog: Any = None,
                 analyse_missing: bool = True, register: bool = True, status: str | None = None) -> RunReport:
    """Write the report of ``run_id`` (``report.md``, ``report.html``, ``img/``).

    Args:
        run_id: a run in the catalog's ``runs`` table.
        out_dir: default ``<data root>/reports/<run_id>``.
        catalog: a :class:`~defsentflow.storage.Catalog` (default: the data root's).
        analyse_missing: compute and record entry-space statistics/plots for PST steps lacking them.
        register: record the report folder as an artifact of kind ``report``.
        status: the status to show instead of the catalog's, for a run that writes its report as
            its last step and ends right after (the pipeline passes ``completed``).

    Example:
        >>> build_report("3f2a9c1b0d4e").html_path
    """
    cat = catalog if catalog is not None else Catalog()
    if not cat.reader:
        with cat.connect():  # a writable open applies the DDL: a catalog from older code gains the views
            pass
    runs = cat.query("SELECT * FROM runs WHERE run_id = ?", [run_id])
    if not runs:
        raise ValueError(f"no run {run_id!r} in the catalog {cat.path}")
    default = report_dir(run_id, cat.root)
    given = Path(out_dir) if out_dir is not None else default
    final = given.expanduser().resolve()
    # One open of the catalog file for the report's few dozen reads (Catalog.session): the sections
    # read and plot in turn, about a second in all, during which other processes wait for the file.
    with output_dir(given, command="report", root=cat.root, default=default) as tmp, cat.session(read_only=cat.reader):
        ctx = _Ctx(cat, run_id, tmp)
        board = load_leaderboard(cat, run_id=run_id)
        lines = summary_section(run_facts(ctx.rows, runs[0], status), board, ctx.image, markdown_table)
        lines += _section_tasks(ctx)
        lines += claims_section(ctx.rows, markdown_table, ctx.image)
        lines += seed_stats_section(ctx.rows, markdown_table)
        lines += _section_models(ctx, board)
        lines += _section_pst(ctx, analyse_missing)
        lines += _section_harvest(ctx)
        lines += label_quality_section(ctx.rows, markdown_table)
        lines += _section_lineage(ctx)
        config = _config_yaml(runs[0])
        body = "\n".join(lines).rstrip() + "\n"
        text = "\n".join([*lines, *_section_config(runs[0], config)]).rstrip() + "\n"
        (tmp / "report.md").write_text(text, encoding="utf-8")
        page = _HTML.format(title=html.escape(f"Run report {run_id}"), body=render_html(body),
                            config=_details_config(runs[0], config))
        (tmp / "report.html").write_text(page, encoding="utf-8")
        images = tuple(ctx.images)
    if register and not cat.reader:
        content = hash_path(final)
        # one key per run: a regenerated report replaces the record of the previous one
        cat.register_artifact(f"report-{run_id}", "report", final, content, name=f"report-{run_id}",
                              run_id=run_id, meta={"images": list(images)})
    return RunReport(run_id, final, final / "report.md", final / "report.html", images, text)
