"""A loaded index encodes queries with a model it loads once, in head mode as in cosine mode."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def test_head_mode_loads_the_backbone_once_and_matches_the_one_shot_vectors(tiny_bert_dir, home, monkeypatch):
    import defsentflow.model.query as heads
    from defsentflow.revdict import build_revdict_index

    table = pa.table({"entry": ["cat", "river", "king"],
                      "definition": ["a small animal", "water that moves to the sea", "the ruler of a country"],
                      "split": ["test"] * 3})
    idx = build_revdict_index(str(tiny_bert_dir), table, mode="head", device="cpu")
    assert idx.meta["mode"] == "head"
    loads = []
    real = heads.prepare_backbone
    monkeypatch.setattr(heads, "prepare_backbone", lambda *a, **kw: loads.append(1) or real(*a, **kw))
    texts = ["a young dog", "the sea"]
    first = idx.query_vectors(texts, device="cpu")
    second = idx.query_vectors(texts[::-1], device="cpu")
    assert len(loads) == 1
    np.testing.assert_allclose(second[::-1], first, atol=1e-5)
    one_shot = heads.sentence_head_vectors(idx.meta["model"], texts, idx.meta["pooling"], idx.meta["use_pooler"],
                                           max_length=idx.meta["max_length"], device="cpu")
    np.testing.assert_allclose(first, one_shot, atol=1e-5)
