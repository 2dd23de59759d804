"""Progressive Separate Training on a tiny model: fresh original weights each step, step 0 as a
candidate, auto stopping, caching and resume."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.model.record import read_model_record
from defsentflow.storage import Catalog
from defsentflow.training.pst import PstSteps
from defsentflow.training.pst_config import GridPoint, PstSection
from tests.dictionary_tables import register_table

SCORED = PstSteps()  # PST scores each candidate by the evaluation's figure path itself


def toy_dictionary(marker: str = "") -> pa.Table:
    """~45 entries from the tiny tokenizer's words; every entry has 2-3 definitions."""
    from tests.conftest import WORDS

    words = list(dict.fromkeys(WORDS))
    rng = np.random.default_rng(11)
    rows = []
    for i, w in enumerate(words[10:55]):
        split = ("train", "train", "train", "dev", "test")[i % 5]
        for _ in range(2 + i % 2):
            rows.append((w, " ".join(rng.choice(words, size=int(rng.integers(4, 9)))) + marker, split))
    return pa.table({"entry": [r[0] for r in rows], "definition": [r[1] for r in rows], "split": [r[2] for r in rows]})


@pytest.fixture()
def dictionary(home):
    """The toy table as dataset 'toy' of the test's data root."""
    tables = {"toy": toy_dictionary()}
    register_table("toy", tables["toy"], home)
    return tables


def section(tiny_bert_dir, **kw) -> PstSection:
    base = dict(base_model=str(tiny_bert_dir), dictionary="toy", steps=2, seeds=[0], grid=[GridPoint(pooling="mean", entry_encoding="amp")],
                selection="revdict-mrr", batch_size=8, max_length=32, device="cpu", entry_batch_size=32)
    base.update(kw)
    return PstSection(**base)


@pytest.fixture()
def spies(monkeypatch):
    """Record every training call (its config, base model path and starting weights) and entry-matrix build."""
    import defsentflow.training.entry_shards as es
    import defsentflow.training.loop as loop

    calls = {"train": [], "matrix": []}
    real_train, real_build = loop.train_encoder, es.build_entry_matrix_sharded

    def train(config, base_model, definitions, targets, **kw):
        from safetensors.numpy import load_file

        from defsentflow.encoders import resolve_model_path
        weights = load_file(str(next(__import__("pathlib").Path(resolve_model_path(base_model)).glob("*.safetensors"))))
        calls["train"].append({"config": config, "base": str(base_model), "weights": weights, "n": len(definitions)})
        return real_train(config, base_model, definitions, targets, **kw)

    def build(encoder, *a, **kw):
        calls["matrix"].append(getattr(encoder, "path", encoder))
        return real_build(encoder, *a, **kw)

    monkeypatch.setattr(loop, "train_encoder", train)
    monkeypatch.setattr(es, "build_entry_matrix_sharded", build)
    return calls


# -- config ---------------------------------------------------------------------------------------------
def test_lr_per_step_must_not_increase():
    assert PstSection(lr_per_step=[3e-5, 2e-5, 2e-5]).lr_for_step(5) == 2e-5
    with pytest.raises(ValueError, match="non-increasing"):
        PstSection(lr_per_step=[1e-5, 2e-5])
    with pytest.raises(ValueError, match="disagree"):
        PstSection(lr=1e-5, lr_per_step=[2e-5, 1e-5])
    with pytest.raises(ValueError):
        PstSection(steps=0)
    with pytest.raises(ValueError, match="distinct"):
        PstSection(seeds=[1, 1])


def pipeline_config(pst: dict, name: str = "toy") -> dict:
    """A minimal pipeline config around a ``pst:`` section (PST configs are pipeline configs)."""
    return {"name": "t", "dictionary": {"name": name, "sources": [{"kind": "jsonl", "paths": ["toy.jsonl"]}]},
            "harvest": None, "pst": {"dictionary": name, **pst}}


def test_unknown_key_and_bad_choice_are_rejected(tmp_path):
    import yaml

    from defsentflow.config import load_section

    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(pipeline_config({"base_model": "minilm", "stepz": 2})))
    with pytest.raises(ValueError, match=r"pst\.stepz"):
        load_section(p, "pst")
    p.write_text(yaml.safe_dump(pipeline_config({"grid": [{"pooling": "avg", "entry_encoding": "amp"}]})))
    with pytest.raises(ValueError, match=r"pst\.grid\.0\.pooling"):
        load_section(p, "pst")
    p.write_text(yaml.safe_dump(pipeline_config({"steps": "auto", "seeds": [3]})))
    assert load_section(p, "pst").steps == "auto"
    p.write_text(yaml.safe_dump({"name": "d", "defsent": {"method": "defsent", "batchsize": 16}}))
    with pytest.raises(ValueError, match=r"defsent\.batchsize"):
        load_section(p, "defsent")


# -- PST ------------------------------------------------------------------------------------------------
def test_every_step_trains_the_original_weights(tiny_bert_dir, home, dictionary, spies):
    from safetensors.numpy import load_file

    from defsentflow.training.pst import run_pst

    original = load_file(str(tiny_bert_dir / "model.safetensors"))
    res = run_pst(section(tiny_bert_dir, steps=3, lr_per_step=[5e-4, 3e-4, 3e-4]), run_id="r1", steps=SCORED)
    assert [s.step for s in res.steps] == [0, 1, 2, 3]
    assert len(spies["train"]) == 3
    for call in spies["train"]:
        assert call["base"] == str(tiny_bert_dir)
        assert call["weights"].keys() == original.keys()
        assert all(np.array_equal(call["weights"][k], original[k]) for k in original)
    # The learning rate never grows; step k's entry matrix comes from step k-1's best encoder.
    lrs = [c["config"].lr for c in spies["train"]]
    assert lrs == [5e-4, 3e-4, 3e-4]
    assert spies["matrix"][0] == str(tiny_bert_dir)
    assert spies["matrix"][1] == res.steps[1].best.model_dir
    assert spies["matrix"][2] == res.steps[2].best.model_dir
    # Trained weights differ from the original (training happened, on a fresh copy each time).
    trained = load_file(str(next(__import__("pathlib").Path(res.steps[2].best.model_dir).glob("*.safetensors"))))
    assert any(not np.array_equal(trained[k], original[k]) for k in original if k in trained)
    rows = Catalog().query("SELECT step, chosen, lr, selection_metric FROM pst_steps WHERE run_id = 'r1' ORDER BY step")
    assert [r["step"] for r in rows] == [0, 1, 2, 3] and all(r["chosen"] for r in rows)
    assert rows[0]["selection_metric"] == "revdict-mrr"
    run = Catalog().query("SELECT * FROM pst_runs WHERE run_id = 'r1'")[0]
    assert run["winner_step"] == res.winner.step and "best revdict-mrr" in run["reason"]
    meta = json.loads((Path_(res.steps[2].best.model_dir) / "defsentflow.json").read_text())
    # portable: the entry encoder is step 1's best, written relative to this model's folder
    assert meta["entry_encoder"] == f"../{Path_(res.steps[1].best.model_dir).name}" and meta["entry_encoding"] == "amp"
    rec = read_model_record(res.steps[2].best.model_dir)
    assert rec.entry_encoder_path(res.steps[2].best.model_dir) == res.steps[1].best.model_dir


def Path_(p):
    from pathlib import Path

    return Path(p)


def _fake_scores(monkeypatch, scores_by_step):
    """Replace the selection evaluator: the score of a model is looked up by its PST step."""
    import defsentflow.evaluation.revdict as revdict
    from defsentflow.eval_tasks import FigureSettings, dictionary_task
    from defsentflow.model import record_of

    def fake(model, table, **kw):
        value = scores_by_step[record_of(model).pst_step or 0]
        mode = kw["modes"][0]
        task = dictionary_task("revdict", "dev", "unseen", FigureSettings(
            max_length=kw["max_length"], autocast=kw["autocast"], max_queries=kw["max_queries"],
            candidates=kw["candidates"], ties=kw["ties"]))
        return [{"modes": {mode: {"mrr": value}}, "rows": [{"task": task, "setting": mode, "metric": "mrr",
                                                            "value": value, "n": 1, "pooling": kw.get("pooling")}]}]

    monkeypatch.setattr(revdict, "evaluate_revdict_runs", fake)


def test_untrained_model_wins_when_training_hurts(tiny_bert_dir, home, dictionary, monkeypatch):
    from defsentflow.training.pst import run_pst

    _fake_scores(monkeypatch, {0: 0.5, 1: 0.2, 2: 0.3})
    res = run_pst(section(tiny_bert_dir, steps=2), run_id="r0", steps=SCORED)
    assert res.winner.step == 0 and res.model_dir == str(tiny_bert_dir)
    assert "untrained" in res.reason
    # the run's name for its choice is an alias of the base model's own id (a folder outside the root)
    from defsentflow.model import base_model_id

    assert res.model_id == base_model_id(str(tiny_bert_dir))
    named = Catalog().query("SELECT n.model_id, n.kind, m.path, m.method FROM model_names AS n JOIN models AS m "
                            "USING (model_id) WHERE n.name = 'pst-r0'")[0]
    assert (named["model_id"], named["kind"], named["path"], named["method"]) == (res.model_id, "run", str(tiny_bert_dir), "base")
    assert Catalog().query("SELECT winner_step FROM pst_runs WHERE run_id = 'r0'")[0]["winner_step"] == 0


def test_auto_stops_when_the_metric_stops_improving(tiny_bert_dir, home, dictionary, monkeypatch, spies):
    from defsentflow.training.pst import run_pst

    _fake_scores(monkeypatch, {0: 0.1, 1: 0.4, 2: 0.3, 3: 0.9})
    res = run_pst(section(tiny_bert_dir, steps="auto", max_steps=4), run_id="ra", steps=SCORED)
    assert [s.step for s in res.steps] == [0, 1, 2] and len(spies["train"]) == 2
    assert res.winner.step == 1
    assert res.stop_note.startswith("auto: stopped after step 2")
    assert "auto: stopped" in Catalog().query("SELECT note FROM pst_runs WHERE run_id = 'ra'")[0]["note"]


def test_falls_back_to_revdict_without_sts_data(tiny_bert_dir, home, dictionary, tmp_path):
    from defsentflow.training.pst import load_training_data, selection_plan
    from defsentflow.training.selection import selection_input_file

    s = section(tiny_bert_dir, selection="stsb-dev", data_dir=str(tmp_path / "missing"))
    plan = selection_plan(s, load_training_data("toy"), selection_input_file)
    assert plan.metric == "revdict-mrr" and "not found" in plan.note
    (tmp_path / "empty").mkdir()
    s = section(tiny_bert_dir, selection="stsb-dev", data_dir=str(tmp_path / "empty"))
    plan = selection_plan(s, load_training_data("toy"), selection_input_file)
    assert plan.metric == "revdict-mrr" and "no STS-B dev set" in plan.note
    # the file the registry declares (sts/STSBenchmark/sts-dev.csv), found by the STS readers' rule
    from defsentflow.storage import hash_path

    dev = tmp_path / "data" / "sts" / "STSBenchmark" / "sts-dev.csv"
    dev.parent.mkdir(parents=True)
    dev.write_text("genre\tfile\tyear\t0\t5.0\ta cat\ta cat\n")
    plan = selection_plan(section(tiny_bert_dir, selection="stsb-dev", data_dir=str(tmp_path / "data")),
                          load_training_data("toy"), selection_input_file)
    assert plan.metric == "stsb-dev" and plan.data_hash == hash_path(dev) and plan.note is None


def test_second_run_recomputes_nothing_and_a_killed_run_resumes(tiny_bert_dir, home, dictionary, monkeypatch, spies):
    import defsentflow.training.loop as loop
    from defsentflow.training.pst import run_pst

    s = section(tiny_bert_dir, steps=2, seeds=[0, 1])
    calls = {"n": 0}
    inner = loop.train_encoder

    def crash_on_third(*a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return inner(*a, **kw)

    monkeypatch.setattr(loop, "train_encoder", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        run_pst(s, run_id="k1", steps=SCORED)
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'k1'")[0]["status"] == "interrupted"
    monkeypatch.setattr(loop, "train_encoder", inner)
    n_before = len(spies["train"])
    first = run_pst(s, run_id="k2", steps=SCORED)
    assert len(spies["train"]) - n_before == 2  # step 1's two seeds were kept; only step 2 trains
    assert first.steps[1].cached and not first.steps[2].cached

    def forbidden(*a, **kw):
        raise AssertionError("a cached run must not recompute")

    monkeypatch.setattr(loop, "train_encoder", forbidden)
    monkeypatch.setattr("defsentflow.evaluation.revdict.evaluate_revdict_runs", forbidden)
    monkeypatch.setattr("defsentflow.training.entry_shards.build_entry_matrix_sharded", forbidden)
    again = run_pst(s, run_id="k3", steps=SCORED)
    assert all(st.cached for st in again.steps[1:])
    assert again.winner.model_dir == first.winner.model_dir and again.reason == first.reason
    assert Catalog().query("SELECT count(*) AS n FROM pst_steps WHERE run_id = 'k3'")[0]["n"] == 1 + 2 + 2


# -- single DefSent runs -----------------------------------------------------------------------------------
def test_defsent_trains_on_single_token_entries_only(tiny_mlm_dir, home, dictionary, spies):
    from transformers import AutoTokenizer

    from defsentflow.training.pst import load_training_data, run_defsent
    from defsentflow.training.pst_config import DefSentSection

    extra = pa.table({"entry": ["sunlight", "sunlight"], "definition": ["light from the sun", "the light of day"],
                      "split": ["train", "train"]})
    dictionary["toy2"] = pa.concat_tables([dictionary["toy"], extra])
    register_table("toy2", dictionary["toy2"])
    s = DefSentSection(base_model=str(tiny_mlm_dir), dictionary="toy2", method="defsent", pooling="cls", lr=1e-3,
                       max_length=32, device="cpu")
    res = run_defsent(s, run_id="d1")
    data = load_training_data("toy2")
    call = spies["train"][-1]
    assert call["config"].method == "defsent" and call["config"].batch_size == 16  # the paper's batch
    assert call["config"].warmup_ratio == 0.1
    tok = AutoTokenizer.from_pretrained(str(tiny_mlm_dir))
    ids = tok("sunlight", add_special_tokens=False)["input_ids"]
    assert ids == [tok.unk_token_id] or len(ids) > 1  # not a word of the tiny vocabulary
    assert res.n_definitions == call["n"] == len(data.definitions) - 2  # so its definitions are left out
    meta = json.loads((Path_(res.model_dir) / "defsentflow.json").read_text())
    assert meta["method"] == "defsent" and meta["decoder"] == "mlm_head"
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'd1'")[0]["status"] == "completed"
    again = run_defsent(s, run_id="d2")  # cached: no second training
    assert again.model_dir == res.model_dir and len(spies["train"]) == 1


def test_ties_go_to_the_candidate_planned_first_and_to_the_earlier_step():
    """The stated rule (docs/distributed.md): results come back in plan order whatever finished first,
    and equal scores go to the earliest candidate, equal figures to the earliest step."""
    from defsentflow.training.pst import choose_winner
    from defsentflow.training.pst_records import Candidate, StepResult
    from defsentflow.training.step_plan import choose_step

    def cand(step, seed, pooling="mean", score=0.5):
        return Candidate(step=step, seed=seed, pooling=pooling, entry_encoding="amp", lr=1e-5, model_id=f"m{step}{seed}",
                         model_dir="d", artifact_key=f"k{step}{seed}{pooling}", use_pooler=False, score=score)

    tied = [cand(1, 0, "cls"), cand(1, 1, "cls"), cand(1, 0), cand(1, 1)]
    assert choose_step(tied, "best_seed")[0] is tied[0]
    assert choose_step(tied, "mean_over_seeds")[0] is tied[0]  # equal means: the first combination, its first seed
    steps = [StepResult(step=s, candidates=(c,), best=c, figure=0.5) for s, c in enumerate([cand(0, None), cand(1, 0)])]
    assert choose_winner(steps)[0].step == 0
