"""The FastICA map of DefSent+ entry matrices (Liu 2024, Sec. 3.3), fitted once and saved beside its matrix.

Training fits :class:`IcaTransform` on the entry matrix and saves it as ``ica.npz`` in the matrix
folder; evaluation and serving load it from there (:func:`head_ica`: the map of a model's head, from
the matrix folder its record names) and never refit it, so the evaluated space is the trained one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from defsentflow.model.head import Head

__all__ = ["ICA_SAMPLE", "ICA_SAMPLE_ABOVE", "IcaTransform", "head_ica"]

ICA_SAMPLE_ABOVE = 200_000
ICA_SAMPLE = 100_000


@dataclass(frozen=True)
class IcaTransform:
    """A fitted FastICA map ``x -> scale * (x - mean) @ unmixing.T``, saved beside the matrix it made.

    Training fits it once on the entry matrix; evaluation and serving load it (:meth:`load`) and
    apply the same map to other entry vectors, so the evaluated space is the trained one (same
    component order and signs). Nothing refits it after training.
    """

    mean: np.ndarray        # [H]
    unmixing: np.ndarray    # [H, H] (FastICA.components_)
    scale: float = 100.0

    FILE = "ica.npz"

    @classmethod
    def fit(cls, matrix: np.ndarray, *, max_iter: int = 1000, random_state: int = 42,
            scale: float = 100.0, standardize: bool = True) -> IcaTransform:
        """FastICA (scikit-learn, unit-variance whitening, logcosh, ``n_components = dim``) on ``matrix``.

        Above ``ICA_SAMPLE_ABOVE`` (200,000) entries the map is fitted on a seeded sample of
        ``ICA_SAMPLE`` (100,000) rows and applied to all; the papers' dictionaries (WordNet, 127k
        entries, and smaller) are always fitted whole.

        ``standardize`` first scales every dimension to zero mean and unit variance (scikit-learn's
        ``StandardScaler``), as the DefSent+ reference code does; the scaling is folded into the
        saved map, so applying it needs nothing else.
        """
        from sklearn.decomposition import FastICA  # lazy: scikit-learn loads only where it is used
        from sklearn.preprocessing import StandardScaler  # lazy: scikit-learn loads only where it is used

        n = len(matrix)
        if n > ICA_SAMPLE_ABOVE:  # FastICA's cost and its float64 copy grow with N: fit on a seeded sample
            rows = np.sort(np.random.default_rng(random_state).choice(n, size=ICA_SAMPLE, replace=False))
            matrix = matrix[rows]
        matrix = np.asarray(matrix, dtype=np.float64)
        n, dim = matrix.shape
        if n < dim:
            raise ValueError(f"ICA needs at least as many entries as dimensions ({n} entries < {dim})")
        shift, spread = np.zeros(dim), np.ones(dim)
        if standardize:
            scaler = StandardScaler().fit(matrix)
            shift, spread = scaler.mean_, scaler.scale_
        ica = FastICA(n_components=dim, max_iter=max_iter, random_state=random_state, whiten="unit-variance",
                      fun="logcosh", tol=1e-4)
        ica.fit((matrix - shift) / spread)
        # scale * ((x - shift) / spread - m) @ W.T  ==  scale * (x - (shift + spread * m)) @ (W / spread).T
        unmixing = np.asarray(ica.components_, np.float64) / spread[None, :]
        mean = shift + spread * np.asarray(ica.mean_, dtype=np.float64)
        return cls(mean=mean, unmixing=unmixing, scale=float(scale))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The transformed rows of ``x`` (float64)."""
        return self.scale * ((np.asarray(x, dtype=np.float64) - self.mean) @ self.unmixing.T)

    def save(self, directory: str | os.PathLike) -> Path:
        path = Path(directory) / self.FILE
        with open(path, "wb") as fh:
            np.savez(fh, mean=self.mean, unmixing=self.unmixing, scale=np.float64(self.scale))
        return path

    @classmethod
    def load(cls, directory: str | os.PathLike) -> IcaTransform:
        """The transform saved in ``directory`` (an entry-matrix directory).

        Raises:
            FileNotFoundError: the directory keeps no ``ica.npz`` (its matrix was not ICA-transformed,
                or it was built before the ICA map was saved, commit f0d2839 of 2026-11-22: rebuild it).
        """
        path = Path(directory) / cls.FILE
        if not path.is_file():
            raise FileNotFoundError(f"{directory}: no saved ICA transform ({cls.FILE}); the entry matrix was "
                                    "built without ICA or before the ICA map was saved (commit f0d2839, 2026-11-22): rebuild it")
        with np.load(path) as z:
            return cls(mean=z["mean"], unmixing=z["unmixing"], scale=float(z["scale"]))


def head_ica(head: Head) -> IcaTransform:
    """The ICA map the entry matrix of ``head`` (:func:`defsentflow.model.model_head`) was transformed
    with at training time, from the matrix folder the model's record names.

    Raises:
        ValueError: the model records no entry matrix, the folder is gone, or it keeps no saved map.
    """
    if head.entry_matrix is None:
        raise ValueError("the model was trained with ICA but records no entry matrix: its ICA space is unknown")
    if not head.entry_matrix.is_dir():
        raise ValueError(f"the model's entry matrix is gone: {head.entry_matrix}")
    try:
        return IcaTransform.load(head.entry_matrix)
    except FileNotFoundError as exc:
        raise ValueError(str(exc)) from None
