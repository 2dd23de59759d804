"""Exact top-k over a served flat inner-product index, fast for micro-batches.

faiss's flat search either scans the index once per query or, past its
``distance_compute_blas_threshold``, scores all queries with one BLAS product. This build's
default threshold (128,000) keeps micro-batches on the per-query scan; measured on the
127k x 384 OEWN index with one thread: 16 queries 128 ms scanned, 26 ms as one product; one
query 8 ms scanned, 15 ms as a product. So one query is scanned and a batch is one product.

On a CPU with bf16 dot products (AVX512-BF16 or AMX), a batch is first scored against a bf16
copy of the index (half the memory to stream, twice the arithmetic rate), the best
``candidates`` per query are rescored exactly in fp32, and the top k of those is returned when it
is provably the exact top k: every entry left out scored at most the last candidate's bf16 score,
so its exact score is at most that plus the bf16 error bound, and the k-th exact score is not
below that. A query that cannot be certified (or a k too large) goes to faiss. Measured: a batch
of 16 in 15 ms CPU instead of 29 ms; 1,920 of 1,920 OEWN test queries certified.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FlatSearch", "cpu_has_bf16"]

_BF16_UNIT = 2.0 ** -8  # bf16 keeps 8 significant bits: round-to-nearest relative error <= 2^-8


def cpu_has_bf16() -> bool:
    """Whether this CPU has native bf16 dot products (Linux: the avx512_bf16 or amx_bf16 flag)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


class FlatSearch:
    """Top-k of a :class:`~defsentflow.revdict.RevdictIndex` for a batch of query vectors.

    Args:
        index: a loaded reverse-dictionary index (its faiss index is searched as it is).
        prefilter: use the certified bf16 prefilter for batches (default: when the CPU has bf16
            dot products and the index is a flat inner-product index).
        candidates: bf16 candidates rescored per query (at least ``4 * k``).
    """

    def __init__(self, index: Any, *, prefilter: bool | None = None, candidates: int = 100):
        import faiss  # lazy: faiss loads only when a dense index is built or searched

        self.index, self.candidates = index, candidates
        fi = index.index
        flat_ip = isinstance(fi, faiss.IndexFlat) and fi.metric_type == faiss.METRIC_INNER_PRODUCT
        if prefilter is None:
            prefilter = cpu_has_bf16()
        self.matrix = self.bf16 = None
        if prefilter and flat_ip and fi.ntotal > candidates:
            import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

            # a view of faiss's own fp32 vectors (no copy), and the bf16 copy the batch is scored on
            self.matrix = faiss.rev_swig_ptr(fi.get_xb(), fi.ntotal * fi.d).reshape(fi.ntotal, fi.d)
            self.bf16 = torch.from_numpy(self.matrix).to(torch.bfloat16)
            self.max_norm = float(np.linalg.norm(self.matrix, axis=1).max())
        self.certified = self.fallbacks = 0

    @property
    def prefilter(self) -> bool:
        return self.bf16 is not None

    def search(self, vecs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores ``[Q, k]``, entry ids ``[Q, k]``), best first, the exact inner products."""
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        k = min(k, self.index.index.ntotal)
        n_cand = max(self.candidates, 4 * k)
        if len(vecs) < 2 or self.bf16 is None or n_cand >= self.index.index.ntotal:
            return self._faiss(vecs, k)
        import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

        approx = (torch.from_numpy(vecs).to(torch.bfloat16) @ self.bf16.T).float()
        bound_vals, cand = (t.numpy() for t in torch.topk(approx, n_cand, dim=1))
        exact = np.einsum("qd,qcd->qc", vecs, self.matrix[cand])
        order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
        scores, ids = np.take_along_axis(exact, order, 1), np.take_along_axis(cand, order, 1)
        # |bf16 score - exact| <= (2u + u^2)|q||x| for the rounded operands, + u(1 + u)^2|q||x| for the
        # rounded product, + fp32 accumulation (and the rescoring's own rounding) over d terms
        norms = np.linalg.norm(vecs, axis=1) * self.max_norm
        eps = (3 * _BF16_UNIT + 4 * _BF16_UNIT ** 2) * norms + vecs.shape[1] * 2.0 ** -23 * norms
        ok = scores[:, -1] >= bound_vals[:, -1] + eps
        self.certified += int(ok.sum())
        if not ok.all():
            bad = np.flatnonzero(~ok)
            self.fallbacks += len(bad)
            scores[bad], ids[bad] = self._faiss(vecs[bad], k)
        return scores.astype(np.float32), ids.astype(np.int64)

    def _faiss(self, vecs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss  # lazy: faiss loads only when a dense index is built or searched

        if len(vecs) < 2:
            return self.index.search_vectors(vecs, k)
        before = faiss.cvar.distance_compute_blas_threshold
        faiss.cvar.distance_compute_blas_threshold = 0
        try:
            return self.index.search_vectors(vecs, k)
        finally:
            faiss.cvar.distance_compute_blas_threshold = before
