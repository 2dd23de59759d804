"""Shared pieces of the sparse indexes: batched query-by-index products and CSR persistence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from defsentflow.progress import progress
from defsentflow.retrieval.topn import top_n_rows

__all__ = ["batched_top_n", "save_csr", "load_csr", "save_terms", "load_terms", "write_meta", "read_meta"]

# Dense score block per batch: rows x documents doubles (64 MiB).
_BLOCK_ELEMENTS = 8 << 20


def batched_top_n(queries: sp.csr_matrix, index_t: sp.csr_matrix, top_n: int, *, batch_size: int | None = None,
                  desc: str = "retrieving") -> tuple[np.ndarray, np.ndarray]:
    """Top-N documents per query row of ``queries @ index_t``, a batch of rows at a time.

    Args:
        queries: ``[Q, V]`` query term weights (CSR).
        index_t: ``[V, M]`` term-by-document weights (CSR), so one row is a term's posting list.
        top_n: results per query (capped at ``M``).
        batch_size: queries per sparse product (default: what keeps the dense block at 64 MiB).

    Returns:
        ``(ids int64 [Q, n], scores float32 [Q, n])``, best first, ties by ascending id.
    """
    q, m = queries.shape[0], index_t.shape[1]
    n = min(top_n, m)
    batch_size = batch_size or max(1, min(4096, _BLOCK_ELEMENTS // max(m, 1)))
    ids = np.empty((q, n), np.int64)
    scores = np.empty((q, n), np.float32)
    with progress(total=q, desc=desc, unit="query") as bar:
        for start in range(0, q, batch_size):
            stop = min(q, start + batch_size)
            block = (queries[start:stop] @ index_t).toarray()
            ids[start:stop], s = top_n_rows(block, n)
            scores[start:stop] = s
            bar.update(stop - start)
    return ids, scores


def save_csr(matrix: sp.csr_matrix, directory: Path, prefix: str) -> None:
    """Plain ``.npy`` arrays (no pickle): ``<prefix>.data/.indices/.indptr.npy`` and the shape in meta."""
    matrix = matrix.tocsr()
    for part in ("data", "indices", "indptr"):
        np.save(directory / f"{prefix}.{part}.npy", getattr(matrix, part))
    np.save(directory / f"{prefix}.shape.npy", np.asarray(matrix.shape, np.int64))


def load_csr(directory: Path, prefix: str) -> sp.csr_matrix:
    parts = [np.load(directory / f"{prefix}.{p}.npy", allow_pickle=False) for p in ("data", "indices", "indptr", "shape")]
    return sp.csr_matrix(tuple(parts[:3]), shape=tuple(int(x) for x in parts[3]))


def save_terms(terms: list[str], directory: Path) -> None:
    pq.write_table(pa.table({"term": pa.array(terms, pa.string())}), directory / "terms.parquet", compression="zstd")


def load_terms(directory: Path) -> list[str]:
    return pq.read_table(directory / "terms.parquet").column("term").to_pylist()


def write_meta(meta: dict, directory: Path) -> None:
    (directory / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True))


def read_meta(directory: Path, kind: str) -> dict:
    path = Path(directory) / "meta.json"
    if not path.exists():
        raise FileNotFoundError(f"not a retrieval index (no meta.json): {directory}")
    meta = json.loads(path.read_text())
    if meta.get("kind") != kind:
        raise ValueError(f"{directory} holds a {meta.get('kind')!r} index, not {kind!r}")
    return meta
