"""The ``revdict`` flow: top-k with scores from the index, and entries added later without retraining."""

from __future__ import annotations


def test_revdict_flow_serves_topk_and_added_entries(prefect_test_harness, tiny_bert_dir, home, monkeypatch):
    import defsentflow.dictionary.tables as revdict
    import defsentflow.training.loop as loop
    from defsentflow.flows.revdict import revdict_flow
    from tests.revdict.test_index import _table

    table = _table()
    real = revdict.load_dictionary_table
    monkeypatch.setattr(revdict, "load_dictionary_table", lambda d, **kw: table if d == "toy" else real(d, **kw))
    monkeypatch.setattr(loop, "train_encoder", lambda *a, **k: (_ for _ in ()).throw(AssertionError("no training")))

    out = revdict_flow(str(tiny_bert_dir), ["water where fish live"], dictionary="toy", k=5, mode="cosine")
    hits = out["results"][0]["entries"]
    assert out["mode"] == "cosine" and len(hits) == 5
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    added = revdict_flow(str(tiny_bert_dir), ["a striped animal like a horse"], dictionary="toy", k=1, mode="cosine",
                         add=[{"entry": "zebra", "definition": "a striped animal like a horse"}])
    assert added["n_entries"] == out["n_entries"] + 1
    assert added["results"][0]["entries"][0]["entry"] == "zebra"
    later = revdict_flow(str(tiny_bert_dir), ["a striped animal like a horse"], dictionary="toy", k=1, mode="cosine")
    assert later["index"] == added["index"] and later["results"][0]["entries"][0]["entry"] == "zebra"
