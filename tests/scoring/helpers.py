"""Test helpers for the scoring tests: a small synthetic corpus and a stand-in retrieval."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from tests.conftest import WORDS

_WORD = re.compile(r"\w+")


def make_corpus(n_docs: int = 12, seed: int = 0, paras=(1, 4), sents=(1, 4), chunk_sentences: int = 3):
    """Sentences and chunks tables in the corpus contract's layout; each document has a topic."""
    rng = np.random.default_rng(seed)
    words = list(dict.fromkeys(WORDS))
    S = {"sentence_id": [], "doc_id": [], "para_idx": [], "sent_idx": [], "text": []}
    C = {"chunk_id": [], "doc_id": [], "first_sentence_id": [], "last_sentence_id": [], "text": []}
    for d in range(n_docs):
        topic = rng.choice(words, size=12, replace=False)
        si = 0
        for p in range(int(rng.integers(paras[0], paras[1] + 1))):
            para = []
            for _ in range(int(rng.integers(sents[0], sents[1] + 1))):
                n = int(rng.integers(5, 10))
                toks = [str(topic[j]) if rng.random() < 0.7 else str(rng.choice(words)) for j in rng.integers(0, 12, n)]
                para.append(" ".join(toks) + ".")
            for w in range(0, len(para), chunk_sentences):
                first = len(S["text"])
                for s in para[w:w + chunk_sentences]:
                    for col, v in zip(S, (len(S["text"]), f"doc{d:03d}", p, si, s)):
                        S[col].append(v)
                    si += 1
                C["chunk_id"].append(len(C["text"]))
                C["doc_id"].append(f"doc{d:03d}")
                C["first_sentence_id"].append(first)
                C["last_sentence_id"].append(len(S["text"]) - 1)
                C["text"].append(" ".join(para[w:w + chunk_sentences]))
    sentences = pa.table({"sentence_id": pa.array(S["sentence_id"], pa.int64()), "doc_id": S["doc_id"],
                          "para_idx": pa.array(S["para_idx"], pa.int32()), "sent_idx": pa.array(S["sent_idx"], pa.int32()),
                          "text": S["text"]})
    chunks = pa.table({"chunk_id": pa.array(C["chunk_id"], pa.int64()), "doc_id": C["doc_id"],
                       "first_sentence_id": pa.array(C["first_sentence_id"], pa.int64()),
                       "last_sentence_id": pa.array(C["last_sentence_id"], pa.int64()), "text": C["text"]})
    return sentences, chunks


class OverlapSearch:
    """A stand-in for the retrieval indexes: shared word types, length-normalised; ties by id."""

    def __init__(self, chunk_texts):
        self.sets = [set(_WORD.findall(t.lower())) for t in chunk_texts]

    def search(self, queries, top_n):
        ids = np.full((len(queries), top_n), -1, dtype=np.int64)
        scores = np.zeros((len(queries), top_n), dtype=np.float32)
        for q, text in enumerate(queries):
            w = set(_WORD.findall(text.lower()))
            s = np.array([len(w & c) / np.sqrt(len(c) + 1) for c in self.sets])
            order = np.lexsort((np.arange(len(s)), -s))[:top_n]
            ids[q, :len(order)] = order
            scores[q, :len(order)] = s[order]
        return ids, scores


def write_text_corpus(directory, n_docs: int = 12, seed: int = 0):
    """A small corpus of text files in the BBC layout: a title line, paragraphs split by blank lines."""
    from pathlib import Path

    rng = np.random.default_rng(seed)
    words = list(dict.fromkeys(WORDS))
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        topic = rng.choice(words, size=14, replace=False)
        paras = []
        for _ in range(int(rng.integers(2, 4))):
            sents = []
            for _ in range(int(rng.integers(2, 5))):
                toks = [str(topic[j]) if rng.random() < 0.7 else str(rng.choice(words)) for j in rng.integers(0, 14, rng.integers(5, 10))]
                sents.append(" ".join(toks).capitalize() + ".")
            paras.append(" ".join(sents))
        (directory / f"{d:03d}.txt").write_text(f"Title {d}\n\n" + "\n\n".join(paras) + "\n")
    return directory


def harvest_config(corpus_dir, encoder_dir, root, **overrides):
    """A small, fast harvest config for the tests."""
    from defsentflow.scoring.config import HarvestConfig

    data = {
        "corpus": {"name": "mini", "paths": [str(corpus_dir)]},
        "retrieval": {"kind": "bm25", "top_n": 6},
        "contexts": {"k": 1, "set_size": 3},
        "scorer": {"discriminative": {"encoder": str(encoder_dir), "hidden": 16, "epochs": 1, "heldout_share": 0.2}},
        "pairs": {"n_pairs": 40, "pairs_per_sentence": 2, "min_words": 3},
        "batch_size": 5,
        "surrogate": {"base_encoder": str(encoder_dir), "epochs": 1, "batch_size": 8, "lr": 1e-3, "device": "cpu"},
        "root": str(root),
    }
    for key, value in overrides.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return HarvestConfig.model_validate(data)


def harvest_settings(**overrides):
    """A :class:`HarvestConfig` for the unit tests of batches, context sets and labels (no inputs:
    the corpus is a name only); ``overrides`` as :func:`harvest_config`'s."""
    from defsentflow.scoring.config import HarvestConfig

    data = {"corpus": {"name": "unit"}}
    for key, value in overrides.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return HarvestConfig.model_validate(data)
