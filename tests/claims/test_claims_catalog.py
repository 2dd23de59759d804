"""Claims measured from synthetic catalog rows: the series each claim reads, the recorded rows,
the ``claims`` view and the report's table and picture. No training: the rows are written here."""

from __future__ import annotations

import json
import statistics

import pytest

from defsentflow.claims import claim_rows, load_claims, measure_claims, plan_arms, record_claims, run_claims
from defsentflow.report.claims_report import claims_table, departures_line, plot_claims
from defsentflow.storage import Catalog

SEEDS = [0, 1, 2]
BASE = {
    "name": "base",
    "dictionary": {"name": "tiny", "sources": [{"kind": "jsonl", "paths": ["tiny.jsonl"]}]},
    "pst": {"base_model": "minilm", "steps": 1, "seeds": [0], "max_train_entries": 100,
            "grid": [{"pooling": "mean", "entry_encoding": "amp"}], "use_pooler": False},
    "eval": {"tasks": ["stsb-dev"], "pooling": "mean", "baselines": ["untrained"]},
    "report": False,
}
CLAIMS = ["defsent_plus_beats_defsent", "later_steps_beat_step_1", "more_entries_help", "entry_space_more_isotropic",
          "ica_candidate_helps", "defsent_raises_wordpred"]


def _claims(**extra):
    return load_claims(data={"name": "claims-test", "base": BASE, "seeds": SEEDS, "claims": CLAIMS,
                             "entries": [50, 100], "steps": 3, **extra})


def _pst_step(cat, run_id, step, score, iso, ica=False):
    path = f"/m/{run_id}/{step}{'-ica' if ica else ''}/matrix.npy"
    cat.execute("INSERT INTO pst_steps (run_id, step, seed, model_id, selection_metric, selection_score, chosen, "
                "entry_matrix_path, pooling, entry_encoding, ica) "
                "VALUES (?, ?, 0, ?, 'stsb-dev', ?, TRUE, ?, 'mean', 'amp', ?)",
                [run_id, step, f"m-{run_id}-{step}-{ica}", score, path, ica])
    if iso is not None:
        cat.execute("INSERT INTO entry_space_stats (run_id, step, matrix_key, matrix_path, n_entries, dim, isoscore) "
                    "VALUES (?, ?, ?, ?, 100, 32, ?)", [run_id, step, f"k-{run_id}-{step}-{ica}", path, iso])


@pytest.fixture()
def filled(home):
    """Arms' runs as the pipeline would record them: PST per step, entry spaces, DefSent models, metrics."""
    claims = _claims()
    plan = plan_arms(claims)
    cat = Catalog()
    runs = {arm: f"run-{i}" for i, arm in enumerate(plan.points)}
    for s in SEEDS:
        pst = runs[f"pst seed={s}"]
        for arm in (pst, runs[f"entries=50 seed={s}"], runs[f"ica seed={s}"]):
            _pst_step(cat, arm, 0, 40.0, None)                                 # the untrained encoder
        _pst_step(cat, runs[f"ica seed={s}"], 1, 50.0, None)
        for step, (score, iso) in enumerate([(50 + s * 0.2, 0.20), (48 + s * 0.1, 0.25 + s * 0.01),
                                             (52 + s * 0.3, 0.30 + s * 0.01)], 1):
            _pst_step(cat, pst, step, score, iso)
        _pst_step(cat, runs[f"entries=50 seed={s}"], 1, 45 + s * 0.5, None)
        _pst_step(cat, runs[f"ica seed={s}"], 3, 51.0 + s, 0.3)              # plain candidate of step 3
        _pst_step(cat, runs[f"ica seed={s}"], 3, 50.0 + s * 1.5, 0.9, ica=True)  # ICA candidate: 50, 51.5, 53
        ds = runs[f"defsent seed={s}"]
        cat.record_stage(ds, "defsent", "completed", cache_key=f"key-ds{s}")
        cat.register_model(f"ds{s}", f"/models/ds{s}", method="defsent", artifact_key=f"key-ds{s}")
        cat.record_metrics(f"ds{s}", [{"task": "stsb-dev", "setting": "all", "metric": "spearman",
                                       "value": 47 + s * 0.4, "pooling": "mean"},
                                      {"task": "wordpred-alldefs", "setting": "mlm_head", "metric": "mrr@10",
                                       "value": 0.10 + 0.01 * s, "pooling": "mean"},
                                      {"task": "wordpred-alldefs", "setting": "mlm_head", "metric": "chance_mrr@10",
                                       "value": 0.001, "pooling": "mean"},
                                      {"task": "wordpred-alldefs", "setting": "mlm_head", "metric": "mrr",
                                       "value": 0.2, "pooling": "mean"}])
        cat.record_stage(ds, "pretrain", "completed", cache_key="key-raw")
    cat.register_model("raw", "/models/pretrain/rawdir", method="pretrain", artifact_key="key-raw")
    cat.record_metrics("base:rawdir", [{"task": "wordpred-alldefs", "setting": "mlm_head", "metric": "mrr@10",
                                        "value": 0.05, "pooling": "mean"},
                                       {"task": "wordpred-alldefs", "setting": "mlm_head", "metric": "mrr",
                                        "value": 0.08, "pooling": "mean"},
                                       {"task": "wordpred", "setting": "mlm_head", "metric": "mrr@10",   # unseen: not read
                                        "value": 0.5, "pooling": "mean"}])
    return claims, plan, runs, cat


def test_each_claim_reads_its_arms_figures(filled):
    claims, plan, runs, cat = filled
    rows = {r.claim: r for r in measure_claims(claims, plan, runs, cat)}
    one = rows["defsent_plus_beats_defsent"]
    assert [s.values for s in one.series] == [{s: 47 + s * 0.4 for s in SEEDS}, {s: 50 + s * 0.2 for s in SEEDS}]
    assert one.verdict == "holds" and one.n == 3
    assert one.diff_mean == pytest.approx(statistics.mean([3.0, 2.8, 2.6]))
    assert one.p < 0.05 and one.ci_low < one.diff_mean < one.ci_high
    later = rows["later_steps_beat_step_1"]
    assert later.series[1].values == {s: 52 + s * 0.3 for s in SEEDS}  # step 3 (the last), not a max over 2..3
    assert "step 2 48.10 ± 0.10 vs step 3 52.30 ± 0.30" in later.note
    entries = rows["more_entries_help"]
    assert [s.label for s in entries.series] == ["50 entries", "100 entries"]
    assert entries.series[1].values == {s: 50 + s * 0.2 for s in SEEDS}  # the base's entries: PST step 1
    iso = rows["entry_space_more_isotropic"]
    assert iso.series[0].values == {s: 0.20 for s in SEEDS} and iso.holds
    ica = rows["ica_candidate_helps"]
    assert [s.values for s in ica.series] == [{0: 51.0, 1: 52.0, 2: 53.0}, {0: 50.0, 1: 51.5, 2: 53.0}]
    assert ica.verdict == "not supported" and ica.diff_mean == pytest.approx(-0.5)
    assert f"the opposite test (effect < 0): p {ica.pairs[0].p_down:.3f}, p (Holm) {ica.pairs[0].p_down_holm:.3f}" \
        in ica.note   # what kept it from contradicted, beside the row's test of effect > 0
    assert iso.series[-1].values == {s: 0.30 + s * 0.01 for s in SEEDS}  # the plain matrix, not the ICA one
    assert len(iso.series) == 3 and len(iso.pairs) == 2   # ordered: judged on every step
    word = rows["defsent_raises_wordpred"]
    assert word.series[0].values == {s: 0.05 for s in SEEDS} and word.verdict == "holds"  # all-definitions
    # full-rank MRR beside MRR@10: what DefSent's untrained Table 2 rows compare on (issue 57)
    assert "full-rank MRR (the figure DefSent's untrained Table 2 rows compare on): raw 0.080 ± 0.000 vs DefSent " \
        "0.200 ± 0.000" in word.note
    # the p of the claims tested is Holm-adjusted over them; each verdict reads the adjusted p
    tested = [r for r in rows.values() if r.p is not None]
    assert all(r.p_holm >= r.p for r in tested) and max(r.p_holm for r in tested) <= 1.0


def test_missing_arms_and_untestable_claims_say_so(filled):
    claims, plan, runs, cat = filled
    del runs["defsent seed=2"]
    rows = {r.claim: r for r in measure_claims(claims, plan, runs, cat)}
    assert rows["defsent_plus_beats_defsent"].n == 2
    assert "defsent seed=2" in rows["defsent_plus_beats_defsent"].note
    no_raw = plan_arms(_claims(claims=["sbert_wk_beats_mean"]))  # the base has no pretrain: section
    assert "pretrain" in no_raw.untestable["sbert_wk_beats_mean"] and not no_raw.points
    rows = measure_claims(_claims(claims=["sbert_wk_beats_mean"]), no_raw, {}, cat)
    assert rows[0].verdict == "cannot be tested here (the base config has no pretrain: section (no raw encoder))"
    # a raw encoder too shallow for SBERT-WK's layer window (layers from 4 up): the claim says why
    from defsentflow.claims.arms import sbert_wk_untestable

    assert "layer 4 up" in sbert_wk_untestable({"pretrain": {"architecture": {"layers": 2}}})
    assert sbert_wk_untestable({"pretrain": {"architecture": {"layers": 12}}}) is None


def test_claims_view_and_report_table(filled, tmp_path):
    claims, plan, runs, cat = filled
    for run_id in ("claims-a", "claims-b"):
        cat.start_run("claims", config={}, run_id=run_id)
        record_claims(run_id, claims.name, measure_claims(claims, plan, runs, cat), cat)
        cat.end_run(run_id, "completed", flow="claims")
    latest = claim_rows(cat, name=claims.name)
    assert [r["claim"] for r in latest] == CLAIMS and {r["claims_run_id"] for r in latest} == {"claims-b"}
    first = claim_rows(cat, run_id="claims-a")
    assert len(first) == len(CLAIMS) and not any(r["latest"] for r in first)
    # the recorded verdict names its scope; the departures of the control from the paper are with it
    assert first[0]["verdict"] == "holds on this control" and first[0]["run_status"] == "completed"
    assert first[0]["scope"] == "on this control"
    away = json.loads(first[0]["departures"])
    assert any("one seed per PST chain" in d for d in away) and any("without the pooler" in d for d in away)
    assert any("learning rate 2e-05 at every step" in d for d in away) and any("64 tokens" in d for d in away)
    assert first[0]["measured"] == "DefSent 47.40 ± 0.40 vs DefSent+ (PST step 1) 50.20 ± 0.20"
    columns, table = claims_table(latest)
    assert columns[3:10] == ("n", "effect", "ci_low", "ci_high", "p", "p (Holm)", "verdict")
    assert table[0][3:5] == (3, "+2.80") and table[0][9] == "holds on this control" and table[0][7] == "<0.001"  # t = 24.2, 2 df
    assert "departs from the paper in" in departures_line(latest)
    assert table[0][8] == f"{first[0]['p_holm']:.3f}" and first[0]["p_holm"] >= first[0]["p"]
    assert first[0]["effect"] == pytest.approx(2.8) and first[0]["ci_low"] > 0
    # a contradicted row prints the opposite test's p that decided it, marked (issue 57)
    down = {**first[0], "verdict": "contradicted on this control", "p": 0.004, "p_holm": 0.042}
    assert claims_table([down])[1][0][7:9] == ("0.004 (effect < 0)", "0.042 (effect < 0)")
    assert plot_claims(latest, tmp_path / "claims.png").stat().st_size > 1000


def test_judging_without_running_reads_the_completed_arms(filled):
    claims, plan, runs, cat = filled
    from defsentflow.sweep import write_point_configs

    write_point_configs(plan.sweep)
    for arm, point in plan.points.items():
        if not arm.startswith("defsent"):  # the DefSent arms never completed
            cat.execute("UPDATE sweep_points SET status = 'completed', run_id = ?, seconds = 60 "
                        "WHERE sweep = ? AND point_id = ?", [runs[arm], claims.name, point.point_id])
    out = run_claims(claims, None, only=["later_steps_beat_step_1", "defsent_plus_beats_defsent"])
    assert [r.claim for r in out.rows] == ["defsent_plus_beats_defsent", "later_steps_beat_step_1"]
    assert out.rows[0].verdict.startswith("cannot be tested here") and "defsent seed=0" in out.rows[0].note
    assert out.rows[1].verdict == "holds" and out.rows[1].seconds == pytest.approx(180.0)
    assert [r["claim"] for r in claim_rows(cat, run_id=out.run_id)] == [r.claim for r in out.rows]
    assert cat.query("SELECT flow, status FROM runs WHERE run_id = ?", [out.run_id]) == [
        {"flow": "claims", "status": "completed"}]
