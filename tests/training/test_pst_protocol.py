"""PST as the DefSent+ paper runs it, on a tiny model: the ICA matrix as an extra candidate at its
step (Eq. 11), ``steps: auto`` never stopping before it, transition steps, separate vs continued
training, the selection rules and the training entries. Scores are stand-ins (a function of the
candidate) so each test knows which candidate must win."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.model.entry_matrix import EntryMatrix
from defsentflow.model.record import read_model_record
from defsentflow.storage import Catalog
from defsentflow.training.pst import PstSteps, run_pst
from defsentflow.training.pst_config import GridPoint, PstSection
from tests.dictionary_tables import register_table


def wide_dictionary() -> pa.Table:
    """60 train, 10 dev and 10 test entries (ICA needs at least as many entries as dimensions: 32)."""
    from tests.conftest import WORDS

    words = list(dict.fromkeys(WORDS))
    rng = np.random.default_rng(5)
    rows = []
    for i in range(80):
        split = "train" if i < 60 else ("dev" if i < 70 else "test")
        for _ in range(2):
            rows.append((f"entry{i}", " ".join(rng.choice(words, size=int(rng.integers(4, 8)))), split))
    return pa.table({"entry": [r[0] for r in rows], "definition": [r[1] for r in rows], "split": [r[2] for r in rows]})


@pytest.fixture()
def wide(home):
    table = wide_dictionary()
    register_table("wide", table, home)
    return table


def section(tiny_bert_dir, **kw) -> PstSection:
    base = dict(base_model=str(tiny_bert_dir), dictionary="wide", steps=2, seeds=[0],
                grid=[GridPoint(pooling="mean", entry_encoding="amp")], selection="stsb-dev", data_dir=None,
                batch_size=16, max_length=24, device="cpu", entry_batch_size=64)
    base.update(kw)
    return PstSection(**base)


@pytest.fixture()
def scored_by(monkeypatch):
    """``scored_by(fn)``: a PST executor whose selection score is ``fn(candidate)``, put where PST
    calls the figure path after each candidate (no evaluation runs, nothing is stored)."""
    import defsentflow.training.candidate as candidate

    def install(fn):
        def score(spec, model_dir, *, compute, device=None):
            if not compute:
                return None
            return dataclasses.replace(spec.candidate, model_dir=model_dir, metric=spec.metric,
                                       score=float(fn(spec.candidate)), score_note=spec.note), []
        monkeypatch.setattr(candidate, "_scored", score)
        return PstSteps()
    return install


@pytest.fixture()
def trained(monkeypatch):
    """Every training call: the model it started from and the entry matrix it trained against."""
    import defsentflow.training.loop as loop

    calls = []
    real = loop.train_encoder

    def spy(config, base_model, definitions, targets, **kw):
        calls.append({"base": str(base_model), "n": len(definitions), "matrix": kw.get("entry_matrix")})
        return real(config, base_model, definitions, targets, **kw)

    monkeypatch.setattr(loop, "train_encoder", spy)
    return calls


def test_the_ica_step_trains_the_plain_and_the_ica_matrix_side_by_side(tiny_bert_dir, home, wide, trained, scored_by):
    steps = scored_by(lambda c: {0: 0.1, 1: 0.2}.get(c.step, 0.3 + (0.2 if c.ica else 0.0) + 0.01 * (c.seed or 0)))
    res = run_pst(section(tiny_bert_dir, steps=2, ica_step=2, seeds=[0, 1]), run_id="ica", steps=steps)
    step2 = res.steps[2]
    assert sorted((c.ica, c.seed) for c in step2.candidates) == [(False, 0), (False, 1), (True, 0), (True, 1)]
    assert len(trained) == 2 + 4  # step 1: two seeds; step 2: both matrices x two seeds
    plain, ica = sorted(step2.entry_matrices, key=lambda m: m.ica)
    assert not plain.ica and ica.ica and (Path(ica.path) / "ica.npz").is_file()
    assert not (Path(plain.path) / "ica.npz").exists()
    assert not np.allclose(EntryMatrix.load(plain.path).matrix, EntryMatrix.load(ica.path).matrix)
    assert res.winner.step == 2 and res.winner.ica and res.winner.seed == 1
    rows = Catalog().query("SELECT ica, count(*) AS n FROM pst_steps WHERE run_id = 'ica' AND step = 2 GROUP BY ica "
                           "ORDER BY ica")
    assert [(r["ica"], r["n"]) for r in rows] == [(False, 2), (True, 2)]
    meta = json.loads((Path(res.winner.model_dir) / "defsentflow.json").read_text())
    assert meta["ica"] is True and meta["entry_matrix"] == f"../../../pst/entry_matrices/{Path(ica.path).name}"
    assert meta["entry_matrix_key"] == ica.key and not any(str(home) in str(v) for v in meta.values())
    assert read_model_record(res.winner.model_dir).entry_matrix_dir(res.winner.model_dir) == Path(ica.path)


def test_auto_never_stops_before_the_ica_step(tiny_bert_dir, home, wide, scored_by):
    steps = scored_by(lambda c: {0: 0.1, 1: 0.5, 2: 0.3}.get(c.step, 0.6 if c.ica else 0.4))
    stopped = run_pst(section(tiny_bert_dir, steps="auto", max_steps=3), run_id="auto-a", steps=steps)
    assert [s.step for s in stopped.steps] == [0, 1, 2] and stopped.stop_note.startswith("auto: stopped after step 2")
    went_on = run_pst(section(tiny_bert_dir, steps="auto", max_steps=3, ica_step=3), run_id="auto-b", steps=steps)
    assert [s.step for s in went_on.steps] == [0, 1, 2, 3]
    assert went_on.winner.step == 3 and went_on.winner.ica


def test_a_worse_step_builds_the_next_entries_only_when_it_is_a_transition(tiny_bert_dir, home, wide, scored_by):
    steps = scored_by(lambda c: {0: 0.1, 1: 0.5, 2: 0.3}.get(c.step, 0.4))
    plain = run_pst(section(tiny_bert_dir, steps=3), run_id="tr-a", steps=steps)
    assert plain.steps[3].entry_matrices[0].encoder == plain.steps[1].best.model_dir  # step 2 made it worse
    trans = run_pst(section(tiny_bert_dir, steps=3, transition_steps=[2]), run_id="tr-b", steps=steps)
    assert trans.steps[3].entry_matrices[0].encoder == trans.steps[2].best.model_dir
    with pytest.raises(ValueError, match="before the last step"):
        section(tiny_bert_dir, steps=3, transition_steps=[3])


def test_separate_training_starts_every_step_from_the_base_model_continuing_does_not(
        tiny_bert_dir, home, wide, trained, scored_by):
    steps = scored_by(lambda c: 0.1 * c.step)
    sep = run_pst(section(tiny_bert_dir, steps=2), run_id="sep", steps=steps)
    assert [t["base"] for t in trained] == [str(tiny_bert_dir)] * 2
    trained.clear()
    cont = run_pst(section(tiny_bert_dir, steps=2, separate=False), run_id="cont", steps=steps)
    assert [t["base"] for t in trained] == [cont.steps[1].best.model_dir]  # step 1 was reused from "sep"
    assert cont.steps[1].best.model_dir == sep.steps[1].best.model_dir
    assert cont.steps[2].best.artifact_key != sep.steps[2].best.artifact_key


def test_mean_over_seeds_picks_the_combination_with_the_best_mean_then_its_best_seed(tiny_bert_dir, home, wide,
                                                                                    scored_by):
    table = {("cls", 0): 0.9, ("cls", 1): 0.1, ("cls", 2): 0.1, ("mean", 0): 0.5, ("mean", 1): 0.6, ("mean", 2): 0.5}
    steps = scored_by(lambda c: 0.0 if c.step == 0 else table[(c.pooling, c.seed)])
    grid = [GridPoint(pooling="cls", entry_encoding="amp"), GridPoint(pooling="mean", entry_encoding="amp")]
    best = run_pst(section(tiny_bert_dir, steps=1, seeds=[0, 1, 2], grid=grid), run_id="best", steps=steps)
    assert (best.winner.pooling, best.winner.seed) == ("cls", 0)
    mean = run_pst(section(tiny_bert_dir, steps=1, seeds=[0, 1, 2], grid=grid, selection_rule="mean_over_seeds"),
                   run_id="mean", steps=steps)
    assert (mean.winner.pooling, mean.winner.seed) == ("mean", 1)
    assert mean.steps[1].figure == pytest.approx(1.6 / 3) and "mean over seeds" in mean.reason
    rows = Catalog().query("SELECT pooling, selection_rule, round(group_mean, 4) AS g, chosen FROM pst_steps "
                           "WHERE run_id = 'mean' AND step = 1 AND seed = 1 ORDER BY pooling")
    assert [(r["pooling"], r["selection_rule"], r["g"], r["chosen"]) for r in rows] == [
        ("cls", "mean_over_seeds", round(1.1 / 3, 4), False), ("mean", "mean_over_seeds", round(1.6 / 3, 4), True)]
    assert Catalog().query("SELECT selection_rule FROM pst_runs WHERE run_id = 'mean'")[0]["selection_rule"] == \
        "mean_over_seeds"


def test_step_1_searches_its_learning_rate_on_the_selection_figure_later_steps_keep_theirs(
        tiny_bert_dir, home, wide, trained, scored_by):
    """DefSent+ Appendix A: a raw PLM's step-1 rate is searched in a grid and chosen on dev (with the
    combination, by the mean over seeds); later steps train at their own rate (lr_per_step)."""
    rate_score = {5e-5: 0.2, 4e-5: 0.6, 3e-5: 0.4}
    steps = scored_by(lambda c: 0.0 if c.step == 0 else rate_score[c.lr] + 0.01 * c.seed if c.step == 1 else 0.7)
    res = run_pst(section(tiny_bert_dir, steps=2, seeds=[0], step1_lr_grid=[5e-5, 4e-5, 3e-5],
                          lr_per_step=[5e-5, 1e-5], selection_rule="mean_over_seeds"), run_id="lrgrid", steps=steps)
    step1 = res.steps[1]
    assert sorted(c.lr for c in step1.candidates) == sorted(rate_score)
    assert len({c.model_dir for c in step1.candidates}) == 3 and len(trained) == 3 + 1
    assert step1.best.lr == 4e-5 and step1.lr == 4e-5 and step1.best.group == "mean-amp lr 4e-05"
    assert step1.figure == pytest.approx(0.6) and set(step1.group_means) == {
        "mean-amp lr 5e-05", "mean-amp lr 4e-05", "mean-amp lr 3e-05"}
    assert {c.lr for c in res.steps[2].candidates} == {1e-5}
    with pytest.raises(ValueError, match="step1_lr_grid"):
        section(tiny_bert_dir, step1_lr_grid=[5e-5, 5e-5])


def test_training_entries_train_split_or_all(tiny_bert_dir, home, wide, trained, scored_by):
    steps = scored_by(lambda c: 0.1 * c.step)
    split = run_pst(section(tiny_bert_dir, steps=1), run_id="split", steps=steps)
    every = run_pst(section(tiny_bert_dir, steps=1, train_entries="all"), run_id="all", steps=steps)
    assert [t["n"] for t in trained] == [120, 160]
    assert [t["matrix"].shape[0] for t in trained] == [60, 80]
    for res, splits in ((split, ["train"]), (every, ["train", "dev", "test"])):
        meta = json.loads((Path(res.winner.model_dir) / "defsentflow.json").read_text())
        assert meta["train_splits"] == splits
    assert Catalog().query("SELECT train_entries FROM pst_runs WHERE run_id = 'all'")[0]["train_entries"] == "all"
    with pytest.raises(ValueError, match="select by stsb-dev"):
        section(tiny_bert_dir, train_entries="all", selection="revdict-mrr")


def test_pst_calls_the_figure_path_itself_and_runs_as_its_docstring_says():
    """No scorer is handed in (issue 54): the library's run_pst scores with the evaluation's figure path."""
    import inspect

    import defsentflow.training.pst as pst
    from defsentflow.tasks.training import PST_TASKS

    assert not hasattr(PstSteps(), "scorer") and not hasattr(PST_TASKS, "scorer")
    assert "run_pst(PstSection(" in inspect.getdoc(pst)


def test_final_last_returns_the_last_step_best_dev_the_best_step():
    """pst.final (issue 37): the papers' final encoder is the last step's; the product's default the best dev step."""
    from types import SimpleNamespace

    from defsentflow.training.pst import choose_winner

    def step(k, figure):
        best = SimpleNamespace(step=k, label=f"cls-ac, seed {k}", metric="stsb-dev", score=figure)
        return SimpleNamespace(step=k, figure=figure, best=best, rule="best_seed")

    history = [step(0, 50.0), step(1, 70.0), step(2, 60.0), step(3, 65.0)]
    assert choose_winner(history)[0].step == 1
    winner, reason = choose_winner(history, "last")
    assert winner.step == 3 and "final: last" in reason and "best step by dev is 1" in reason
    assert choose_winner(history[:1], "last")[0].step == 0   # nothing trained: the untrained encoder
