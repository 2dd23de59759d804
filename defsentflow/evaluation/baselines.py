"""Unsupervised pair-similarity baselines that need no trained sentence encoder.

* :func:`tfidf_similarities`: cosine of TF-IDF vectors (scikit-learn's ``TfidfVectorizer``:
  lower-cased word unigrams, smoothed idf, L2 norm), the idf fitted on the sentences given;
* :func:`word_vector_average`: the mean of an encoder's *input* token embeddings over a
  sentence's word pieces (no transformer layer, special tokens left out): "averaged word
  vectors" with the encoder's own vocabulary.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from defsentflow.encoders import model_construction, resolve_model_path

__all__ = ["tfidf_similarities", "word_vector_average"]


def tfidf_similarities(sentences1: Sequence[str], sentences2: Sequence[str], fit_texts: Sequence[str]) -> np.ndarray:
    """Cosine of the TF-IDF vectors of ``sentences1[i]`` and ``sentences2[i]`` (0 when one has no known word).

    Example:
        >>> tfidf_similarities(["a cat sat"], ["the cat sat"], ["a cat sat", "the cat sat", "dogs ran"])
    """
    from sklearn.feature_extraction.text import TfidfVectorizer  # lazy: scikit-learn loads only where it is used

    if len(sentences1) != len(sentences2):
        raise ValueError(f"{len(sentences1)} first sentences but {len(sentences2)} second ones")
    vec = TfidfVectorizer(dtype=np.float64).fit(list(fit_texts))
    a, b = vec.transform(list(sentences1)), vec.transform(list(sentences2))  # rows are L2-normalised (or zero)
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def word_vector_average(model: str | os.PathLike, texts: Sequence[str], *, batch_size: int = 256) -> np.ndarray:
    """``[len(texts), dim]`` float32: the mean input embedding of each text's word pieces.

    Texts with no word piece (empty after tokenisation) get a zero vector.
    """
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it
    from transformers import (  # lazy: transformers takes seconds to load; only code that loads a model needs it
        AutoModel,
        AutoTokenizer,
    )

    path = resolve_model_path(model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    with model_construction():
        table = AutoModel.from_pretrained(path).get_input_embeddings().weight.detach().float()
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for a in range(0, len(texts), batch_size):
        ids = tokenizer(list(texts[a:a + batch_size]), add_special_tokens=False, truncation=True,
                        max_length=512)["input_ids"]
        for j, row in enumerate(ids):
            if row:
                out[a + j] = table[torch.tensor(row)].mean(0).numpy()
    return out
