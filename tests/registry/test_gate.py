"""The promotion gate and aliases on a small catalog written by the test (no training)."""

from __future__ import annotations

import json

import pytest

from defsentflow.registry import (
    PromoteSection,
    compare,
    decide,
    figure_value,
    gate_run,
    history,
    holder,
    promote,
    record_change,
    retire,
    rollback,
)
from defsentflow.registry.aliases import AliasChange, rollback_target
from defsentflow.storage import Catalog

FIG = "revdict_dev_unseen_q50_len32_cosine_mrr"
OTHER = "revdict_dev_unseen_q30_len32_cosine_mrr"  # the same task under another query cap: another protocol


def _champion(model="old", figure=FIG):
    return AliasChange("demo@champion", 1, model, None, "gate", "me@here", figure=figure)


@pytest.mark.parametrize(("value", "held", "min_delta", "decision", "words"), [
    (0.30, 0.20, 0.0, "promoted", "0.3 > 0.2"),
    (0.20, 0.20, 0.0, "kept", "ties"),                         # a tie keeps the champion
    (86.71714, 86.71699, 0.0, "kept", "86.72 ties its 86.72"), # equal as reported (4 significant digits): a tie
    (0.10, 0.20, 0.0, "kept", "is below"),
    (0.25, 0.20, 0.1, "kept", "within min_delta"),             # better, but not by the margin
    (0.35, 0.20, 0.1, "promoted", "+ 0.1"),
    (0.30, None, 0.0, "not-comparable", "has no " + FIG),     # the champion was measured under another name
    (None, 0.20, 0.0, "not-comparable", "no " + FIG + " of new"),
])
def test_the_rule(value, held, min_delta, decision, words):
    p = decide("demo@champion", "new", value, _champion(), held, FIG, min_delta)
    assert p.decision == decision and words in p.reason, p.reason
    assert (p.champion, p.value, p.champion_value, p.figure) == ("old", value, held, FIG)


def test_each_decision_is_an_outcome_a_run_ends_with():
    from defsentflow.registry import DECISIONS
    from defsentflow.run_summary import OUTCOMES

    assert set(DECISIONS) <= set(OUTCOMES)  # the flow's state name, tag and the summary's sentence


def test_first_run_sets_the_champion_and_the_same_model_keeps_it():
    assert decide("demo@champion", "new", None, None, None, FIG, 0.0).decision == "promoted"
    assert decide("demo@champion", "old", 0.9, _champion(), 0.1, FIG, 0.0).decision == "kept"


def test_a_changed_protocol_says_which_name_the_champion_was_judged_by():
    p = decide("demo@champion", "new", 0.9, _champion(figure=OTHER), None, FIG, 0.0)
    assert p.decision == "not-comparable" and f"promoted by {OTHER}" in p.reason and "stays demo@champion" in p.reason


@pytest.mark.parametrize(("section", "error"), [
    ({"metric": "revdict_test_unseen_q50_cosine_mrr"}, "not a dev figure"),   # choose on dev, report on test
    ({"min_delta": -0.1}, "greater than or equal to 0"),
    ({"min_delta": float("nan")}, "finite"),
    ({"metrik": "stsb_dev_spearman"}, "metrik"),
])
def test_the_promote_section_refuses_what_it_cannot_judge_by(section, error):
    with pytest.raises(ValueError, match=error):
        PromoteSection.model_validate(section)


def test_the_promote_section_leaves_the_run_fingerprint_alone(tmp_path):
    from defsentflow.config import config_from_dict
    from defsentflow.pipeline import input_fingerprint

    (tmp_path / "d.jsonl").write_text('{"entry": "a", "definition": "b"}\n')
    base = {"name": "demo", "dictionary": {"name": "d", "sources": [{"kind": "jsonl", "paths": [str(tmp_path / "d.jsonl")]}]},
            "pst": {"base_model": "minilm", "dictionary": "d"}}
    plain = config_from_dict(base).model_dump(mode="json")
    strict = config_from_dict({**base, "promote": {"min_delta": 0.01}}).model_dump(mode="json")
    assert input_fingerprint(plain)["config"] == input_fingerprint(strict)["config"]


def _filed(cat: Catalog, model: str, value: float | None, figure: str = FIG, pooling: str = "mean") -> None:
    # a model made elsewhere, filed by its name (what a row record may hold outside the data root)
    cat.register_model(model, model.removeprefix("base:"), method="defsent_plus", pooling=pooling)
    if value is not None:  # the figure as PST's selection files it (its registry name is the column)
        task = {FIG: "revdict-dev+q50+len32", OTHER: "revdict-dev+q30+len32"}[figure]
        cat.record_metrics(model, [{"task": task, "setting": "cosine", "metric": "mrr", "value": value,
                                    "pooling": pooling}])


def _run(cat: Catalog, run_id: str, model: str, column: str = FIG) -> dict:
    cat.start_run("pipeline", config={"name": "demo"}, run_id=run_id)
    cat.execute("INSERT INTO pst_runs (run_id, model_id, winner_model_id, selection_column) VALUES (?, ?, ?, ?)",
                [run_id, f"pst-{run_id}", model, column])
    decision = gate_run(cat, {"name": "demo"}, run_id, {"model_id": model})
    cat.end_run(run_id, "completed", flow="pipeline")
    return decision.to_dict()


def test_the_gate_over_runs_records_every_decision(home):
    cat = Catalog()
    for model, value in (("m1", 0.20), ("m2", 0.10), ("m3", 0.30)):
        _filed(cat, model, value)
    with cat.connect(read_only=True) as con:
        assert figure_value(con, "m1", FIG) == pytest.approx(0.20) and figure_value(con, "m1", OTHER) is None
    ghost = _run(cat, "demo-0", "ghost")                            # a model the catalog never filed
    assert ghost["decision"] == "not-comparable" and "not filed in the catalog" in ghost["reason"]
    assert _run(cat, "demo-1", "m1")["decision"] == "promoted"      # the first run sets it
    assert _run(cat, "demo-2", "m2")["decision"] == "kept"          # worse on dev
    third = _run(cat, "demo-3", "m3", column=OTHER)                 # better, but measured under another protocol
    assert third["decision"] == "not-comparable" and f"no {OTHER}" in third["reason"]
    assert _run(cat, "demo-4", "m3")["decision"] == "promoted"
    rows = cat.query("SELECT run_id, promotion, promotion_note FROM runs WHERE run_id <> 'demo-0' ORDER BY run_id")
    assert [r["promotion"] for r in rows] == ["promoted", "kept", "not-comparable", "promoted"]
    assert "0.1 is below its 0.2" in rows[1]["promotion_note"]
    # what `defsentflow runs` and the served /runs show: the decision and why, and its sentence
    from defsentflow.serve.catalog import ServeCatalog
    from tests.integration.tiny_pipeline_utils import cli_here

    listed = cli_here(["runs"]).stdout
    assert "kept: worse" in listed and "promoted: first model" in listed and "0.1 is below its 0.2" in listed, listed
    served = {r["run_id"]: r for r in ServeCatalog().runs()}
    assert served["demo-2"]["champion"] == "kept: worse" and "is below" in served["demo-2"]["promotion_note"]
    # the report's header: the gate's sentence, both figures in it
    from defsentflow.report.run_report import build_report

    report = build_report("demo-4", analyse_missing=False, register=False).markdown
    line = report.split("**Champion:** ")[1].splitlines()[0]
    assert line.startswith("`demo@champion` promoted (better): m3 replaces m1 as demo@champion") and "0.3 \\> 0.2" in line, line
    changes = history(cat, "demo@champion")
    assert [(c.from_model, c.model_id, c.action, c.run_id) for c in changes] == [
        (None, "m1", "gate", "demo-1"), ("m1", "m3", "gate", "demo-4")]
    assert (changes[1].figure, changes[1].value, changes[1].from_value) == (FIG, pytest.approx(0.3), pytest.approx(0.2))
    # the alias is a name of the model: the lookup every command uses finds it, the leaderboard shows it
    assert cat.query("SELECT model_id FROM model_ids WHERE model_id = 'demo@champion'")
    assert "demo@champion" in cat.query("SELECT also_known_as FROM leaderboard WHERE model_id = 'm3'")[0]["also_known_as"]


def test_rollback_walks_back_the_promotions_and_the_gate_respects_it(home):
    cat = Catalog()
    for model, value in (("a", 0.1), ("b", 0.2), ("c", 0.3)):
        _filed(cat, model, value)
        record_change(cat, "demo@champion", model, action="promote", figure=FIG)
    assert rollback(cat, "demo@champion").model_id == "b"
    assert rollback(cat, "demo@champion").model_id == "a"       # a stack: back to the first, not back and forth
    with pytest.raises(ValueError, match="no earlier model to roll back to"):
        rollback(cat, "demo@champion")
    assert [c.action for c in history(cat, "demo@champion")] == ["promote"] * 3 + ["rollback"] * 2  # nothing deleted
    # c was rolled back: a later run that selects it again leaves the champion where a person put it
    again = _run(cat, "demo-9", "c")
    assert again["decision"] == "kept" and "was rolled back" in again["reason"] and again["why"] == "rolled back"
    assert holder(cat, "demo@champion").model_id == "a"
    assert rollback_target(history(cat, "demo@champion")) is None


def test_a_manual_promotion_compares_first(home):
    cat = Catalog()
    _filed(cat, "good", 0.3)
    _filed(cat, "bad", 0.1)
    _filed(cat, "unmeasured", None)
    record_change(cat, "demo@champion", "good", action="gate", figure=FIG, value=0.3)
    assert compare(cat, "bad", "demo@champion").decision == "kept"                  # worse: promote asks first
    assert compare(cat, "unmeasured", "demo@champion").decision == "not-comparable"
    change = promote(cat, compare(cat, "bad", "demo@champion"))
    assert (change.from_model, change.model_id, change.action) == ("good", "bad", "promote")
    assert (change.value, change.from_value) == (pytest.approx(0.1), pytest.approx(0.3))
    with pytest.raises(ValueError, match="no model of the catalog"):
        record_change(cat, "demo@champion", "nobody", action="promote")
    with pytest.raises(ValueError, match="CONFIG@LABEL"):
        record_change(cat, "demo", "good", action="promote")


def test_catalog_rebuild_restores_every_alias_and_its_history(home):
    from defsentflow.storage.rebuild import rebuild_catalog
    from defsentflow.storage.row_records import row_record_path

    cat = Catalog()
    for model in ("base:a", "base:b"):
        _filed(cat, model, 0.1)
        record_change(cat, "demo@champion", model, action="promote", figure=FIG)
    record_change(cat, "demo@prod", "base:a", action="promote")
    rollback(cat, "demo@champion")
    record_change(cat, "demo@typo", "base:b", action="promote")
    retire(cat, "demo@typo")                     # retired: in the history, named by nothing
    before = [c.to_dict() for c in history(cat)]
    for f in home.glob("catalog.duckdb*"):
        f.unlink()
    Catalog._ddl_applied.clear()  # as in a new process
    counts = rebuild_catalog()
    assert counts["alias_changes"] == 6 and not counts["problems"]
    assert [c.to_dict() for c in history(Catalog())] == before
    assert holder(Catalog(), "demo@typo") is None and not Catalog().query("SELECT 1 FROM model_ids WHERE model_id = 'demo@typo'")
    # the record is input like the others: rows of another alias in it are refused, the rest restored
    path = row_record_path(home, "alias", "demo@prod")
    data = json.loads(path.read_text())
    data["tables"]["alias_changes"]["rows"][0][0] = "demo@champion"
    path.write_text(json.dumps(data))
    counts = rebuild_catalog()
    assert any("a row of 'demo@champion', not of 'demo@prod'" in p for p in counts["problems"]), counts["problems"]
    assert {c.alias for c in history(Catalog())} == {"demo@champion", "demo@typo"}


def test_a_tie_at_the_reported_precision_goes_to_the_earlier_model():
    """The rule of PST's choice of a step and of the gate (defsentflow.ties): an lr 1e-9 step that moves
    STS-B dev by float noise (86.71714 against the untrained 86.71699) does not win, and the report's
    Why line says it tied."""
    from types import SimpleNamespace

    from defsentflow.report.summary import why_sentence
    from defsentflow.training.pst import choose_winner

    def step(n, figure):
        best = SimpleNamespace(step=n, label=f"s{n}", metric="stsb-dev", score=figure)
        return SimpleNamespace(step=n, figure=figure, best=best, rule="best_seed")

    winner, reason = choose_winner([step(0, 86.71699), step(1, 86.71714)])
    assert winner.step == 0 and "untrained encoder is returned" in reason
    assert choose_winner([step(0, 86.71699), step(1, 86.73)])[0].step == 1     # a difference as reported wins
    why = why_sentence({"winner_step": 0, "selection_metric": "stsb-dev"},
                       [{"step": 0, "score": 86.71699}, {"step": 1, "score": 86.71714}])
    assert "step 1 tied it" in why and "a tie keeps the earlier model" in why, why
