"""The one figure path (issue 54): after a PST run, ``eval`` of the model it chose, and of the base
model with step 0's settings, reads back the figure the selection computed instead of computing it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from defsentflow.cli import main
from defsentflow.storage import Catalog
from defsentflow.training.pst import run_pst
from defsentflow.training.pst_config import GridPoint, PstSection
from tests.dictionary_tables import register_table


def _toy() -> pa.Table:
    from tests.conftest import WORDS

    words, rng, rows = list(dict.fromkeys(WORDS)), np.random.default_rng(5), []
    for i, w in enumerate(words[10:40]):
        for _ in range(2):
            rows.append((w, " ".join(rng.choice(words, size=5)), ("train", "train", "dev", "test")[i % 4]))
    return pa.table({"entry": [r[0] for r in rows], "definition": [r[1] for r in rows], "split": [r[2] for r in rows]})


def test_eval_after_pst_reuses_the_selection_s_figures(home, tiny_bert_dir, sts_data_dir, capsys):
    register_table("toy", _toy(), home)
    result = run_pst(PstSection(base_model=str(tiny_bert_dir), dictionary="toy", steps=1, seeds=[0],
                                grid=[GridPoint(pooling="mean", entry_encoding="amp")], selection="stsb-dev",
                                data_dir=str(sts_data_dir), batch_size=8, max_length=16, device="cpu",
                                entry_batch_size=32), run_id="tiny")
    assert result.selection.metric == "stsb-dev"
    (trained,) = result.steps[1].candidates
    (base,) = result.steps[0].candidates
    for model, selected in ((trained.model_id, trained), (str(tiny_bert_dir), base)):
        assert main(["--quiet", "eval", model, "--tasks", "stsb-dev", "--data-dir", str(sts_data_dir),
                     "--device", "cpu"]) == 0
        out = capsys.readouterr().out
        assert "reused the stored figures" in out and f"for {selected.model_id} " in out
        (row,) = Catalog().query("SELECT value FROM metrics WHERE model_id = ? AND task = 'stsb-dev' AND "
                                 "run_id LIKE 'eval-%'", [selected.model_id])
        assert row["value"] == selected.score


def test_a_head_other_than_the_model_s_own_names_itself(tiny_bert_dir):
    """Item 5: a run's baseline scored with the run's head (cosine logits) is another figure name,
    which the model card and the run summary set beside the trained model's own head figure."""
    import dataclasses

    from defsentflow.eval_tasks import metric_column, without_head
    from defsentflow.evaluation.config import EvaluateSection
    from defsentflow.evaluation.figures import head_identity, run_head
    from defsentflow.evaluation.kinds.revdict import head_tokens
    from defsentflow.model import model_head
    from defsentflow.report.summary import _own_head

    own = model_head(str(tiny_bert_dir))
    assert head_tokens(own, own) == ()
    cosine = dataclasses.replace(own, normalize_logits=True)
    assert head_tokens(own, cosine) == ("headcos",)
    section = EvaluateSection(model=str(tiny_bert_dir), head={"normalize_logits": True, "use_pooler": False})
    assert head_identity(run_head(str(tiny_bert_dir), section)) == head_identity(cosine)
    bare = section.model_copy(update={"head": {"normalize_logits": False, "use_pooler": False}})
    assert run_head(str(tiny_bert_dir), EvaluateSection.model_validate(bare.model_dump())) is None  # its own: no head
    assert without_head("revdict-dev+q500+splitcands+headcos") == "revdict-dev+q500+splitcands"
    column = metric_column("revdict-dev+q500+splitcands+headcos", "head", "mrr")
    assert column == "revdict_dev_unseen_q500_splitcands_headcos_head_mrr"
    assert _own_head(column) == "revdict_dev_unseen_q500_splitcands_head_mrr"


def test_a_figures_model_part_is_the_models_content_not_its_training_time(tmp_path):
    import json

    from defsentflow.evaluation.figures import model_figure_hash

    def folder(name, seconds, weights=b"w", pooling="mean"):
        d = tmp_path / name
        d.mkdir()
        (d / "model.safetensors").write_bytes(weights)
        (d / "config.json").write_text("{}")
        (d / "defsentflow.json").write_text(json.dumps({"pooling": pooling, "train_seconds": seconds}))
        return d

    first = model_figure_hash(folder("a", 0.06))
    assert model_figure_hash(folder("b", 0.08)) == first  # the same training again, on another worker
    assert model_figure_hash(folder("c", 0.06, weights=b"v")) != first
    assert model_figure_hash(folder("d", 0.06, pooling="cls")) != first  # the record's head settings count
