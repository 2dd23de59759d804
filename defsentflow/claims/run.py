"""Run a claims file: its arms through the pipeline, then one judged row per claim in the catalog.

:func:`run_claims` takes the function that runs one pipeline config (``run_point(point,
config_path, run_id)``, as :func:`defsentflow.sweep.run_sweep` does): the CLI passes the pipeline
flow, a test a plain call. The arms are the points of a sweep named after the claims file, so an
arm that completed with the same config is not run again and every stage shared between arms is a
cache hit: a killed claims run resumes where it stopped. The rows go to ``claim_results``
(``sql/085_claims.sql``), shown by the ``claims`` view.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from defsentflow.claims.arms import ArmPlan, defsent_wordpred_task, plan_arms
from defsentflow.claims.config import ClaimsConfig
from defsentflow.claims.figures import CatalogFigures, claim_checks, claim_series
from defsentflow.claims.judge import CANNOT, Judgement, PairTest, Series, digits, judge, judge_family, series_text
from defsentflow.claims.papers import CLAIMS, departures
from defsentflow.fanout import FanOut, in_turn
from defsentflow.storage import Catalog, hash_config
from defsentflow.sweep import point_rows, run_sweep

__all__ = ["ClaimRow", "ClaimsOutcome", "claim_rows", "measure_claims", "record_claims", "run_claims"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimRow:
    """One judged claim: what is claimed, by the paper, what was measured, and the verdict."""

    claim: str
    position: int
    series: tuple[Series, ...]
    holds: bool | None
    clear: bool | None          # the deciding test's unadjusted p < alpha (a contradicted claim's: effect < 0); None: not tested
    verdict: str
    diff_mean: float | None     # = effect
    diff_sd: float | None
    n: int
    note: str | None
    arms: dict[str, str]
    seconds: float | None
    ci_low: float | None = None   # two-sided 90% t interval of the effect (claims.judge)
    ci_high: float | None = None
    p: float | None = None        # the deciding one-sided paired t-test (a contradicted claim's: effect < 0)
    p_holm: float | None = None   # p adjusted (Holm) over the family: both directions of every pair tested
    pairs: tuple[PairTest, ...] = ()   # every adjacent pair's test (an ordered claim has several)
    scope: str = "on this control"
    departures: tuple[str, ...] = ()   # how the control departs from the paper (claims.papers.departures)

    @property
    def judged(self) -> str:
        """The verdict with its scope: "holds on this control"; "cannot be tested here (...)" as it is."""
        return self.verdict if self.verdict.startswith(CANNOT) else f"{self.verdict} {self.scope}"

    @property
    def statement(self) -> str:
        return CLAIMS[self.claim].statement

    @property
    def paper(self) -> str:
        return CLAIMS[self.claim].paper

    @property
    def metric(self) -> str:
        return CLAIMS[self.claim].metric

    @property
    def measured(self) -> str:
        return series_text(list(self.series)) if self.series else ""

    @property
    def seeds(self) -> list[int]:
        if not self.series:
            return []
        return sorted(set(self.series[0].values) & set(self.series[-1].values))


@dataclass
class ClaimsOutcome:
    run_id: str
    rows: list[ClaimRow]
    seconds: float
    failed: dict[str, str]


def measure_claims(claims: ClaimsConfig, plan: ArmPlan, runs: dict[str, str], catalog: Any,
                   seconds: dict[str, float] | None = None) -> list[ClaimRow]:
    """Judge every claim of the file from its arms' runs (arm name -> pipeline run id), together:
    the p of the claims tested is Holm-adjusted over them (:func:`~defsentflow.claims.judge.judge_family`)."""
    spec = claims.spec
    fig = CatalogFigures(catalog)
    pooling = (claims.base.get("eval") or {}).get("pooling", "mean")
    wordpred_task = defsent_wordpred_task(claims.base)   # DefSent's Table 2 protocol: every definition
    # the DefSent+ paper trains through the pooler: a control that does not says so on each PST claim
    no_pooler = None if claims.base["pst"].get("use_pooler", True) else "DefSent+ arms without the pooler (pst.use_pooler: false)"
    found: list[tuple[str, int, dict[str, str], float | None, tuple[Series, ...], str | None, Judgement]] = []
    with catalog.session(read_only=True):  # one open of the catalog file for every figure read
        for i, claim in enumerate(spec.claims, 1):
            arms = {a: runs[a] for a in plan.needs.get(claim, []) if a in runs}
            secs = sum((seconds or {}).get(a, 0.0) for a in arms) if seconds else None
            if claim in plan.untestable:
                reason = f"{CANNOT} ({plan.untestable[claim]})"
                found.append((claim, i, arms, secs, (), None, Judgement(reason, None, None, None, None, None, 0)))
                continue
            series, note = claim_series(claim, plan, arms, fig, seeds=list(spec.seeds), steps=spec.steps,
                                        entries=list(spec.entries), ica_step=spec.ica_step,
                                        pretrain_seeds=list(spec.pretrain_seeds), statistic=spec.isotropy_statistic,
                                        pooling=pooling, wordpred_task=wordpred_task)
            checks = claim_checks(claim, plan, arms, fig, seeds=list(spec.seeds), entries=list(spec.entries),
                                  series=series, pooling=pooling, wordpred_task=wordpred_task)
            missing = [a for a in plan.needs.get(claim, []) if a not in runs]
            pst_arms = any(not a.startswith(("defsent", "raw")) for a in plan.needs.get(claim, []))
            note = "; ".join(x for x in (note, no_pooler if pst_arms else None,
                                         f"arms without a completed run: {', '.join(missing)}" if missing else None) if x) or None
            found.append((claim, i, arms, secs, tuple(series), note, judge(series, checks)))
    judged = judge_family([f[-1] for f in found])
    away = tuple(departures(claims.base, spec))
    return [ClaimRow(claim, i, series, j.holds, None if j.p is None else j.p < 0.05, j.verdict, j.effect, j.diff_sd,
                     j.n, _steps_note(note, j), arms, secs, j.ci_low, j.ci_high, j.p, j.p_holm, j.pairs, spec.scope, away)
            for (claim, i, arms, secs, series, note, _), j in zip(found, judged)]


def _steps_note(note: str | None, j: Judgement) -> str | None:
    """An ordered claim's note names each step's test (the row's figures are its deciding step's); a
    claim not supported whose step falls names the opposite test's adjusted p, which kept it from
    "contradicted" (the row prints the test of "effect > 0")."""
    if j.verdict == "not supported" and len(j.pairs) == 1 and (j.pairs[0].effect or 0.0) < 0:
        x = j.pairs[0]
        against = f"the opposite test (effect < 0): p {x.p_down:.3f}, p (Holm) {x.p_down_holm:.3f}"
        return f"{note}; {against}" if note else against
    if len(j.pairs) < 2 or not j.tested:
        return note
    def one(x: PairTest) -> str:
        down = x.verdict() == "contradicted"
        q = x.p_down_holm if down else x.p_holm
        ph = "" if q is None else f", p (Holm{', effect < 0' if down else ''}) {q:.3f}"
        return f"{x.lower} -> {x.higher}: {x.effect:+.{digits(x.effect)}f}{ph}, {x.verdict()}"
    steps = "steps: " + "; ".join(one(x) for x in j.pairs)
    return f"{note}; {steps}" if note else steps


def record_claims(run_id: str, name: str, rows: Sequence[ClaimRow], catalog: Any) -> None:
    """Replace this claims run's rows in ``claim_results``."""
    with catalog.transaction() as con:
        con.execute("DELETE FROM claim_results WHERE claims_run_id = ?", [run_id])
        for r in rows:
            con.execute(
                "INSERT INTO claim_results (claims_run_id, name, position, claim, statement, paper, metric, series, "
                "measured, seeds, n, diff_mean, diff_sd, holds, clear, verdict, note, arms, seconds, ci_low, ci_high, p, "
                "p_holm, pairs, scope, departures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?)",
                [run_id, name, r.position, r.claim, r.statement, r.paper, r.metric,
                 json.dumps([s.to_dict() for s in r.series]), r.measured, json.dumps(r.seeds), r.n, r.diff_mean,
                 r.diff_sd, r.holds, r.clear, r.judged, r.note, json.dumps(r.arms), r.seconds, r.ci_low, r.ci_high,
                 r.p, r.p_holm, json.dumps([x.to_dict() for x in r.pairs]), r.scope, json.dumps(list(r.departures))])


def claim_rows(catalog: Any, *, run_id: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
    """Rows of the ``claims`` view: one claims run's, else the latest row of each claim (of ``name``)."""
    if run_id is not None:
        return catalog.query("SELECT * FROM claims WHERE claims_run_id = ? ORDER BY position", [run_id])
    return catalog.query("SELECT * FROM claims WHERE latest AND (? IS NULL OR name = ?) ORDER BY name, position",
                         [name, name])


RunPoint = Callable[[Any, str, str], dict[str, Any]]


def run_claims(claims: ClaimsConfig, run_point: RunPoint | None, *, only: Sequence[str] | None = None,
               force: bool = False, root: str | os.PathLike | None = None, run_id: str | None = None,
               fan_out: FanOut = in_turn) -> ClaimsOutcome:
    """Run the arms the claims need (those not yet completed), then judge and record every claim.

    ``only`` restricts the run to some claims (their arms only). ``run_point=None`` runs nothing:
    the claims are judged from the arms that completed so far (a claim missing arms says which).
    The claims run is a ``runs`` row (flow ``claims``) whose wall time is the command's. The arms
    run through ``fan_out`` (:func:`defsentflow.sweep.run_sweep`'s; default one after another).
    """
    selected = list(claims.spec.claims)
    if only:
        unknown = sorted(set(only) - set(selected))
        if unknown:
            raise ValueError(f"--only: {', '.join(unknown)} not among the file's claims ({', '.join(selected)})")
        selected = [c for c in selected if c in only]
    plan = plan_arms(claims)  # every arm stays a point of the sweep, so --only never drops another claim's arms
    wanted = list(dict.fromkeys(plan.points[a].point_id for c in selected for a in plan.needs.get(c, [])))
    cat = Catalog(root)
    run_id = run_id or f"{claims.name}-{uuid.uuid4().hex[:8]}"
    config = {"claims": claims.spec.model_dump(mode="json"), "path": claims.path, "base_path": claims.base_path}
    t0 = time.perf_counter()
    with cat.recorded_run("claims", run_id, config=config, config_hash=hash_config(config)) as run:
        failed: dict[str, str] = {}
        if plan.sweep is not None:
            names = {p.point_id: n for n, p in plan.points.items()}
            outcome = (run_sweep(plan.sweep, run_point, only=wanted, force=force, root=root, fan_out=fan_out)
                       if wanted and run_point is not None else None)
            failed = {names.get(k, k): v for k, v in outcome.failed.items()} if outcome else {}
        done = point_rows(claims.name, root) if plan.sweep is not None else {}
        runs, seconds = {}, {}
        for arm, point in plan.points.items():
            row = done.get(point.point_id) or {}
            if row.get("status") == "completed" and row.get("run_id"):
                runs[arm] = row["run_id"]
                seconds[arm] = float(row.get("seconds") or 0.0)
        rows = [r for r in measure_claims(claims, plan, runs, cat, seconds) if r.claim in selected]
        record_claims(run_id, claims.name, rows, cat)
        secs = time.perf_counter() - t0
        run.status = "completed" if not failed else "failed"
        run.note = json.dumps({"seconds": round(secs, 1), "failed_arms": failed})
    return ClaimsOutcome(run_id=run_id, rows=rows, seconds=secs, failed=failed)
