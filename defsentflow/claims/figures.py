"""Read each arm's figures from the catalog, and turn them into each claim's series.

Nothing here trains or evaluates: every figure is what the pipeline runs of the arms recorded
(``pst_steps`` for PST's per-step STS-B dev scores, ``entry_space_stats`` for the entry matrices,
``metrics`` for the evaluations of DefSent models and of the raw encoder). A missing figure leaves
the seed out of its series (the claim's row then says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from defsentflow.claims.arms import ArmPlan, arm_name
from defsentflow.claims.judge import Check, Series, mean_sd, series_text
from defsentflow.model import matrix_folder
from defsentflow.model.ids import base_model_id

__all__ = ["CatalogFigures", "claim_checks", "claim_series"]


def _matrix_dir(path: str | None) -> str | None:
    return matrix_folder(path) if path else None


class CatalogFigures:
    """Figures of pipeline runs, read from a :class:`~defsentflow.storage.Catalog`."""

    def __init__(self, catalog: Any):
        self.cat = catalog
        self._ica: dict[str, set[str]] = {}
        self._rows: dict[tuple, list[dict[str, Any]]] = {}

    def _query(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        """A read of the catalog, once per (query, parameters) for this object's life: the claims read
        the same figures for several claims and checks, and each catalog query opens a connection."""
        key = (sql, tuple(tuple(p) if isinstance(p, list) else p for p in params))
        if key not in self._rows:
            self._rows[key] = self.cat.query(sql, params)
        return self._rows[key]

    def ica_matrices(self, run_id: str) -> set[str]:
        """Directories of the run's ICA-transformed entry matrices (``pst_steps.ica``)."""
        if run_id not in self._ica:
            rows = self._query("SELECT DISTINCT entry_matrix_path FROM pst_steps WHERE run_id = ? AND ica", [run_id])
            self._ica[run_id] = {_matrix_dir(r["entry_matrix_path"]) for r in rows}
        return self._ica[run_id]

    def step_score(self, run_id: str, step: int, *, ica: bool | None = False,
                   steps: tuple[int, int] | None = None) -> float | None:
        """The best selection score at ``step`` (or over ``steps`` = (first, last)) of the run, among
        candidates trained against a plain (``ica=False``), ICA (``True``) or any (``None``) matrix."""
        lo, hi = steps if steps else (step, step)
        rows = self._query("SELECT selection_score FROM pst_steps WHERE run_id = ? AND step BETWEEN ? AND ? "
                              "AND selection_score IS NOT NULL AND (? IS NULL OR coalesce(ica, false) = ?)",
                              [run_id, lo, hi, ica, ica])
        return max((r["selection_score"] for r in rows), default=None)

    def entry_statistic(self, run_id: str, step: int, statistic: str) -> float | None:
        """A statistic of the step's plain (not ICA) entry matrix (``entry_space_stats``)."""
        if statistic not in ("isoscore", "partition_isotropy", "effective_rank"):
            raise ValueError(f"unknown entry-space statistic {statistic!r}")
        rows = self._query(f"SELECT matrix_path, {statistic} AS value FROM entry_space_stats "  # noqa: S608 - checked
                              "WHERE run_id = ? AND step = ? ORDER BY created_at DESC", [run_id, step])
        icas = self.ica_matrices(run_id)
        values = [r["value"] for r in rows if r["value"] is not None and _matrix_dir(r["matrix_path"]) not in icas]
        return values[0] if values else None

    def stage_model(self, run_id: str, methods: list[str]) -> dict[str, Any] | None:
        """The model a stage of the run produced or reused (``models`` joined by artifact key)."""
        rows = self._query(
            "SELECT m.model_id, m.path FROM stages AS s JOIN models AS m ON m.artifact_key = s.cache_key "
            "WHERE s.run_id = ? AND list_contains(?, m.method) ORDER BY s.ended_at DESC NULLS LAST LIMIT 1",
            [run_id, methods])
        return rows[0] if rows else None

    def metric(self, model_id: str | None, task: str, metric: str, *, pooling: str | None,
               setting: str | None = None) -> float | None:
        """The newest value of ``metric`` on ``task`` for a model id (any setting unless given)."""
        if model_id is None:
            return None
        rows = self._query(
            "SELECT value FROM metrics WHERE model_id = ? AND task = ? AND metric = ? "
            "AND coalesce(pooling, '') = coalesce(?, '') AND (? IS NULL OR setting = ?) "
            "ORDER BY created_at DESC LIMIT 1", [model_id, task, metric, pooling, setting, setting])
        return rows[0]["value"] if rows else None

    def defsent_model(self, run_id: str) -> str | None:
        m = self.stage_model(run_id, ["defsent", "defsent_plus"])
        return m["model_id"] if m else None

    def raw_model_ids(self, run_id: str) -> tuple[str, str] | None:
        """The ids the raw (pretrained) encoder's baseline scores are filed under: mean, SBERT-WK."""
        m = self.stage_model(run_id, ["pretrain"])
        if m is None:
            return None
        base = base_model_id(m["path"])
        return base, f"{base}+sbert_wk"


def _per_seed(seeds: list[int], read: Callable[[int], float | None]) -> dict[int, float]:
    out = {}
    for s in seeds:
        v = read(s)
        if v is not None:
            out[s] = float(v)
    return out


def claim_series(claim: str, plan: ArmPlan, runs: dict[str, str], fig: CatalogFigures, *,
                 seeds: list[int], steps: int, entries: list[int], ica_step: int | None,
                 pretrain_seeds: list[int], statistic: str, pooling: str = "mean",
                 wordpred_task: str = "wordpred-alldefs") -> tuple[list[Series], str | None]:
    """The series of one claim (in the paper's increasing order) and a note, from the arms' runs."""
    def run(kind: str, s: int, n: int | None = None) -> str | None:
        return runs.get(arm_name(kind, s, n))

    def score(kind: str, step: int, **kw: Any) -> Callable[[int], float | None]:
        return lambda s: fig.step_score(run(kind, s), step, **kw) if run(kind, s) else None

    later = (2, steps)
    if claim == "defsent_plus_beats_defsent":
        defsent = lambda s: fig.metric(fig.defsent_model(run("defsent", s)) if run("defsent", s) else None,  # noqa: E731
                                       "stsb-dev", "spearman", pooling=pooling, setting="all")
        return [Series("DefSent", _per_seed(seeds, defsent)),
                Series("DefSent+ (PST step 1)", _per_seed(seeds, score("pst", 1)))], None
    if claim == "later_steps_beat_step_1":  # equal arms: one step each (a per-seed max over steps 2..N would favour it)
        per_step = [Series(f"step {k}", _per_seed(seeds, score("pst", k))) for k in range(1, steps + 1)]
        note = "per step: " + series_text(per_step)
        return [per_step[0], per_step[-1]], note
    if claim == "separate_beats_continuing":
        best = lambda kind: lambda s: fig.step_score(run(kind, s), 0, steps=later) if run(kind, s) else None  # noqa: E731
        return [Series("continuing", _per_seed(seeds, best("continue"))),
                Series("separate", _per_seed(seeds, best("pst")))], None
    if claim == "more_entries_help":
        out = []
        for n in entries:
            kind, nn = ("pst", None) if n == plan.base_entries else ("entries", n)
            out.append(Series(f"{n} entries", _per_seed(
                seeds, lambda s, kind=kind, nn=nn: fig.step_score(runs[arm_name(kind, s, nn)], 1)
                if arm_name(kind, s, nn) in runs else None)))
        return out, None
    if claim == "ica_candidate_helps":
        k = ica_step or steps
        return [Series(f"plain, step {k}", _per_seed(seeds, score("ica", k, ica=False))),
                Series(f"ICA, step {k}", _per_seed(seeds, score("ica", k, ica=True)))], \
            f"both candidates of step {k} of the same run (Eq. 11)"
    if claim == "entry_space_more_isotropic":
        stat = lambda k: lambda s: fig.entry_statistic(run("pst", s), k, statistic) if run("pst", s) else None  # noqa: E731
        # "grows over the steps": an ordered claim, judged on every step (step 1 -> 2, 2 -> 3, ...)
        per_step = [Series(f"step {k} entries", _per_seed(seeds, stat(k))) for k in range(1, steps + 1)]
        return per_step, f"{statistic} of the plain entry matrix"
    if claim == "sbert_wk_beats_mean":
        def raw(pooling_: str, p: int) -> float | None:
            rid = runs.get(arm_name("pst", seeds[0]) if p == plan.base_pretrain_seed else arm_name("raw", p))
            ids = fig.raw_model_ids(rid) if rid else None
            if ids is None:
                return None
            return fig.metric(ids[0] if pooling_ != "sbert_wk" else ids[1], "stsb-dev", "spearman",
                              pooling=pooling_, setting="all")
        return [Series("mean pooling", _per_seed(pretrain_seeds, lambda p: raw(pooling, p))),
                Series("SBERT-WK", _per_seed(pretrain_seeds, lambda p: raw("sbert_wk", p)))], \
            "paired by pretraining seed (one raw encoder each)"
    if claim == "defsent_raises_wordpred":
        def wordpred(trained: bool, s: int, metric: str = "mrr@10") -> float | None:
            rid = run("defsent", s)
            if not rid:
                return None
            ids = fig.raw_model_ids(rid)
            model = fig.defsent_model(rid) if trained else (ids[0] if ids else None)
            return fig.metric(model, wordpred_task, metric, pooling=pooling)
        # DefSent's untrained rows of Table 2 are not MRR@10 (docs/papers.md): full-rank MRR is what compares
        full = [Series(label, _per_seed(seeds, lambda s, t=t: wordpred(t, s, "mrr")))
                for label, t in (("raw", False), ("DefSent", True))]
        note = "the raw encoder is the same for every seed"
        if any(x.values for x in full):
            note += "; full-rank MRR (the figure DefSent's untrained Table 2 rows compare on): " + series_text(full)
        return [Series("raw encoder", _per_seed(seeds, lambda s: wordpred(False, s))),
                Series("DefSent", _per_seed(seeds, lambda s: wordpred(True, s)))], note
    raise ValueError(f"unknown claim {claim!r}")


def _mean(values: dict[int, float]) -> float | None:
    return mean_sd(list(values.values()))[0]


def claim_checks(claim: str, plan: ArmPlan, runs: dict[str, str], fig: CatalogFigures, *, seeds: list[int],
                 entries: list[int], series: list[Series], pooling: str = "mean",
                 wordpred_task: str = "wordpred-alldefs") -> list[Check]:
    """The functional-baseline checks of a claim's arms (:class:`~defsentflow.claims.judge.Check`): a
    PST arm's step-1 STS-B dev above the untrained encoder's (step 0) and above 0 (chance for a
    Spearman); a DefSent model's word-prediction MRR@10 above its floor (0: no word in the top 10),
    above chance over the head's candidates and above the raw encoder's, with the full-rank MRRs said
    when it fails. A claim whose baseline is the untrained encoder itself (SBERT-WK vs mean pooling,
    DefSent's word prediction) checks only the floor and the chance level (for word prediction: both
    arms above the floor)."""
    def run(kind: str, s: int, n: int | None = None) -> str | None:
        return runs.get(arm_name(kind, s, n))

    def pst_check(kind: str, label: str, n: int | None = None) -> Check:
        trained = _per_seed(seeds, lambda s: fig.step_score(run(kind, s, n), 1, ica=None) if run(kind, s, n) else None)
        untrained = _per_seed(seeds, lambda s: fig.step_score(run(kind, s, n), 0, ica=None) if run(kind, s, n) else None)
        return Check(f"{label}: STS-B dev at step 1", _mean(trained), chance=0.0, untrained=_mean(untrained))

    def wordpred_read(metric: str, trained: bool = True) -> float | None:
        def read(s: int) -> float | None:
            rid = run("defsent", s)
            ids = fig.raw_model_ids(rid) if rid else None
            model = (fig.defsent_model(rid) if trained else (ids[0] if ids else None)) if rid else None
            return fig.metric(model, wordpred_task, metric, pooling=pooling)
        return _mean(_per_seed(seeds, read))

    def full_rank() -> str:
        """The full-rank MRRs that MRR@10's floor hides (a check's detail)."""
        figs = [("raw", wordpred_read("mrr", trained=False)), ("DefSent", wordpred_read("mrr")),
                ("chance", wordpred_read("chance_mrr"))]
        known = [f"{k} {v:.2g}" for k, v in figs if v is not None]
        return f"full-rank MRR: {', '.join(known)}" if known else ""

    def wordpred_check(label: str = "DefSent", trained: bool = True) -> Check:
        # MRR@10 is 0 when no query's word reaches the top 10: a floor at which every arm looks alike
        return Check(f"{label}: word-prediction MRR@10", wordpred_read("mrr@10", trained),
                     chance=wordpred_read("chance_mrr@10") if trained else None,
                     untrained=wordpred_read("mrr@10", trained=False) if trained else None, floor=0.0,
                     detail=full_rank() or None)

    if claim == "defsent_plus_beats_defsent":
        return [wordpred_check(), pst_check("pst", "DefSent+")]
    if claim in ("later_steps_beat_step_1", "entry_space_more_isotropic"):
        return [pst_check("pst", "PST")]
    if claim == "separate_beats_continuing":
        return [pst_check("pst", "separate"), pst_check("continue", "continuing")]
    if claim == "ica_candidate_helps":
        return [pst_check("ica", "PST with the ICA candidate")]
    if claim == "more_entries_help":
        n = min(entries)
        return [pst_check("pst", f"{n} entries") if n == plan.base_entries else pst_check("entries", f"{n} entries", n)]
    if claim == "defsent_raises_wordpred":  # the raw encoder is this claim's lower arm: both at the floor is the reason
        c = wordpred_check()
        return [replace(wordpred_check("raw encoder", trained=False), detail=None), replace(c, untrained=None)]
    if claim == "sbert_wk_beats_mean":  # both arms are the untrained encoder: only the chance level applies
        return [Check(f"{x.label}: STS-B dev", _mean(x.values), chance=0.0) for x in series]
    raise ValueError(f"unknown claim {claim!r}")
