"""No selection reads a test-split figure: changing only test-split data changes no choice."""

from __future__ import annotations

import pyarrow as pa

from defsentflow.storage import Catalog
from defsentflow.training.pst import PstSteps
from tests.dictionary_tables import register_table
from tests.training.test_pst_schedule import section, toy_dictionary

SCORED = PstSteps()  # PST scores each candidate by the evaluation's figure path itself


def _with_other_test_split(table: pa.Table) -> pa.Table:
    """The same dictionary with every test-split definition replaced (train and dev untouched)."""
    from tests.conftest import WORDS

    words = list(dict.fromkeys(WORDS))
    defs = [d if s != "test" else " ".join(words[(i * 7 + k) % len(words)] for k in range(6))
            for i, (d, s) in enumerate(zip(table.column("definition").to_pylist(), table.column("split").to_pylist()))]
    return table.set_column(table.column_names.index("definition"), "definition", pa.array(defs, pa.string()))


def test_changing_only_test_data_changes_no_pst_selection(tiny_bert_dir, home, monkeypatch):
    import defsentflow.dictionary.tables as revdict
    from defsentflow.training.pst import run_pst

    base = toy_dictionary()
    other = _with_other_test_split(base)
    assert base.column("definition").to_pylist() != other.column("definition").to_pylist()
    tables = {"toy": base, "toy-other-test": other}
    real = revdict.load_dictionary_table
    monkeypatch.setattr(revdict, "load_dictionary_table",
                        lambda d, **kw: tables[d] if isinstance(d, str) and d in tables else real(d, **kw))
    for name, table in tables.items():
        register_table(name, table, home)
    asked: list[str] = []
    import defsentflow.evaluation.revdict as evaluation

    real_eval = evaluation.evaluate_revdict_runs
    monkeypatch.setattr(evaluation, "evaluate_revdict_runs",
                        lambda *a, **kw: asked.extend(s for s, _ in kw["runs"]) or real_eval(*a, **kw))

    a = run_pst(section(tiny_bert_dir, steps=2, seeds=[0, 1]), run_id="sel-a", steps=SCORED)
    b = run_pst(section(tiny_bert_dir, steps=2, seeds=[0, 1], dictionary="toy-other-test"), run_id="sel-b", steps=SCORED)
    assert asked and set(asked) == {"dev"}  # every selection figure is a dev figure
    assert (a.winner.step, a.winner.seed, a.winner.score) == (b.winner.step, b.winner.seed, b.winner.score)
    for sa, sb in zip(a.steps, b.steps):
        assert [(c.seed, c.score) for c in sa.candidates] == [(c.seed, c.score) for c in sb.candidates]
        assert (sa.best.seed, sa.best.score) == (sb.best.seed, sb.best.score)
    rows = Catalog().query("SELECT run_id, step, seed, chosen, selection_score FROM pst_steps "
                           "WHERE run_id IN ('sel-a', 'sel-b') ORDER BY step, seed, run_id")
    pairs = [(rows[i], rows[i + 1]) for i in range(0, len(rows), 2)]
    assert pairs and all((x["chosen"], x["selection_score"]) == (y["chosen"], y["selection_score"]) for x, y in pairs)
