"""A data root with a served reverse-dictionary index of a tiny random model, for the web app's tests."""

from __future__ import annotations

import pyarrow as pa
import pytest

# entry -> its one definition; a definition sent as the query is its own entry's nearest vector
DEFS = {
    "cat": "a small animal that lives in a house",
    "river": "water that moves to the sea",
    "king": "the man who is ruler of a country",
    "apple": "a round red fruit that is sweet",
    "book": "pages of words to read",
    "bird": "an animal with wings that can fly",
    "car": "a vehicle with wheels on the road",
    "night": "the dark time of the day",
    "song": "music with words",
    "child": "a young person",
    "city": "a large town with many people",
    "door": "you open it to go into a room",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_bert_dir):
    """One data root per module: a 12-entry cosine index of the tiny model, known by its id (tiny-pst)
    and a name that stands for it (dsp-tiny, in model_names), and a completed run with its report."""
    from defsentflow.report import build_report
    from defsentflow.revdict import build_revdict_index
    from defsentflow.storage import Catalog

    home = tmp_path_factory.mktemp("serve-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFSENTFLOW_HOME", str(home))
        table = pa.table({"entry": list(DEFS), "definition": list(DEFS.values()), "split": ["test"] * len(DEFS)})
        build_revdict_index(str(tiny_bert_dir), table, mode="cosine", device="cpu")
        cat = Catalog()
        cat.register_model("tiny-pst", tiny_bert_dir, method="defsent_plus", pooling="mean", run_id="run-1",
                           names=[("dsp-tiny", "run")])
        cat.start_run("pipeline", config={"name": "tiny"}, run_id="run-1")
        cat.record_metrics("tiny-pst", [{"task": "stsb-dev", "setting": "all", "metric": "spearman", "value": 50.0,
                                         "n": 3, "pooling": "mean"}], run_id="run-1")
        cat.end_run("run-1", "completed", flow="pipeline")
        cat.execute("INSERT INTO sweeps (sweep, n_points) VALUES ('lr-sweep', 1)")
        cat.execute("INSERT INTO sweep_points (sweep, point_id, position, label, status, run_id, seconds) "
                    "VALUES ('lr-sweep', 'p1', 1, 'lr=1e-05', 'completed', 'run-1', 12.5)")
        build_report("run-1")
        yield home
