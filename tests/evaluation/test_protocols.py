"""One protocol, one query set (issue 37): word prediction and the reverse dictionary choose their
queries by the same rule, and only ``unseen`` is a capped sample."""

from __future__ import annotations

import pyarrow as pa
import pytest

from defsentflow.eval_tasks import PROTOCOLS
from defsentflow.evaluation.protocols import select_queries, trained_texts
from defsentflow.evaluation.revdict import prepare_queries


def _table(n: int = 60) -> pa.Table:
    rows = []
    for i in range(n):
        split = ("train", "dev", "test")[i % 3]
        for j in range(1 + (i // 3) % 3):   # one, two or three definitions
            rows.append((f"w{i}", f"definition {j} of word {i}", split))
    rows.append(("w2", "definition 0 of word 0", "test"))   # the text of a train definition: seen
    return pa.table({k: [r[i] for r in rows] for i, k in enumerate(("entry", "definition", "split"))})


def test_each_protocol_is_one_rule_and_only_unseen_is_capped():
    t = _table()
    cols = [t.column(c).to_pylist() for c in ("entry", "definition", "split")]
    seen = trained_texts(t)
    test_rows = [i for i, s in enumerate(cols[2]) if s == "test"]
    every = select_queries(*cols, split="test", protocol="all-definitions", max_queries=3)
    assert sorted(every.rows) == test_rows and every.n_capped == 0
    multi = select_queries(*cols, split="test", protocol="multi-definition", max_queries=3)
    single = [i for i in test_rows if sum(cols[0][k] == cols[0][i] for k in test_rows) < 2]
    assert sorted(multi.rows) == sorted(set(test_rows) - set(single)) and multi.n_single == len(single) > 0
    unseen = select_queries(*cols, split="test", protocol="unseen", exclude=seen, max_queries=3)
    assert len(unseen.rows) == 3 and unseen.n_excluded == 1 and unseen.n_capped == len(multi.rows) - 1 - 3
    assert all(cols[1][i] != "definition 0 of word 0" for i in unseen.rows)
    assert not PROTOCOLS["multi-definition"].capped and PROTOCOLS["unseen"].capped


def test_unseen_means_the_same_queries_for_word_prediction_and_the_reverse_dictionary(monkeypatch):
    """Word prediction's queries are the reverse dictionary's, less those whose word its head lacks."""
    import defsentflow.evaluation.wordpred as wordpred

    t = _table()
    seen = trained_texts(t)
    revdict = prepare_queries(t, split="test", exclude=seen, max_queries=10)
    targets = {f"w{i}": i for i in range(0, 60, 2)}   # a head that knows every other word
    texts, _, n_excluded, n_untargeted = wordpred._queries(t, "test", "unseen", targets, seen, 10)
    assert set(texts) <= set(revdict.query_texts) and len(texts) + n_untargeted == len(revdict.query_rows) == 10
    assert n_excluded == revdict.n_excluded == 1
    with pytest.raises(ValueError, match="protocol must be one of"):
        select_queries(["a"], ["x"], ["test"], split="test", protocol="papers")
