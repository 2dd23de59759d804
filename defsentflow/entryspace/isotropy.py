"""How isotropic is an entry space? Statistics of an entry matrix ``[N, D]`` (rows = entries).

* ``avg_cosine``: mean cosine similarity of random pairs of distinct rows (anisotropic spaces
  sit in a narrow cone, so random pairs have a high cosine; Ethayarajh 2019).
* ``top1_var_share``: share of the total variance on the first principal component.
* ``isoscore``: IsoScore (Rudman, Gillman, Rayne & Eickhoff, ACL Findings 2022), 0 (all variance
  on one axis) .. 1 (variance spread evenly over all D axes). The paper's algorithm:

  1. take the point cloud X (N points in R^D);
  2. reorient it with PCA (rotate onto the principal axes, no scaling);
  3. Sigma_D = the variance of each coordinate of the rotated cloud (= the eigenvalues of X's
     covariance, so steps 2-3 are computed as ``eigvalsh(cov(X))``);
  4. normalise: Sigma_hat = sqrt(D) * Sigma_D / ||Sigma_D|| (so the isotropic cloud gives 1);
  5. isotropy defect: delta = ||Sigma_hat - 1|| / sqrt(2 (D - sqrt(D))), in [0, 1];
  6. dimensions used: k = (D - delta^2 (D - sqrt(D)))^2 / D, fraction phi = k / D;
  7. IsoScore = (D phi - 1) / (D - 1).

* ``partition_isotropy``: Mu & Viswanath (2018, "All-but-the-top") I = min_c Z(c) / max_c Z(c)
  with Z(c) = sum_i exp(c . x_i) over the eigenvectors c of X^T X (computed in log space).
* ``effective_rank``: exp of the entropy of the normalised singular values of the centred
  matrix (Roy & Vetterli 2007), 1 .. D.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "avg_cosine",
    "effective_rank",
    "entry_space_stats",
    "isoscore",
    "isoscore_from_variances",
    "partition_isotropy",
    "pca_variances",
    "top1_var_share",
]


def _as_matrix(matrix: np.ndarray) -> np.ndarray:
    x = np.asarray(matrix, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise ValueError(f"an entry matrix must be 2-D with at least 2 rows and 2 columns, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("entry matrix has NaN or infinite values")
    return x


def pca_variances(matrix: np.ndarray) -> np.ndarray:
    """Variances along the principal axes (covariance eigenvalues, ddof=1), largest first, >= 0."""
    x = _as_matrix(matrix)
    xc = x - x.mean(0)
    cov = xc.T @ xc / (len(x) - 1)
    return np.clip(np.linalg.eigvalsh(cov)[::-1], 0.0, None)


def avg_cosine(matrix: np.ndarray, *, n_pairs: int = 100_000, seed: int = 0) -> float:
    """Mean cosine of ``n_pairs`` random pairs of distinct rows (all pairs when there are fewer)."""
    x = _as_matrix(matrix)
    n = len(x)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True).clip(min=1e-12)
    if n * (n - 1) // 2 <= n_pairs:
        g = unit @ unit.T
        return float(g[np.triu_indices(n, 1)].mean())
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, n_pairs)
    j = (i + rng.integers(1, n, n_pairs)) % n  # j != i
    return float(np.einsum("ij,ij->i", unit[i], unit[j]).mean())


def top1_var_share(matrix: np.ndarray) -> float:
    """Share of the total variance on the first principal component."""
    var = pca_variances(matrix)
    total = var.sum()
    return float(var[0] / total) if total > 0 else float("nan")


def isoscore_from_variances(variances: np.ndarray) -> float:
    """Steps 4-7 of IsoScore from the variances along the principal axes (see module doc)."""
    var = np.asarray(variances, dtype=np.float64)
    d = len(var)
    norm = np.linalg.norm(var)
    if d < 2 or norm == 0:
        return float("nan")
    sigma_hat = np.sqrt(d) * var / norm
    delta = np.linalg.norm(sigma_hat - 1.0) / np.sqrt(2.0 * (d - np.sqrt(d)))
    k = (d - delta**2 * (d - np.sqrt(d))) ** 2 / d
    phi = k / d
    return float((d * phi - 1.0) / (d - 1.0))


def isoscore(matrix: np.ndarray) -> float:
    """IsoScore of the rows of ``matrix`` (1 = isotropic, 0 = one direction)."""
    return isoscore_from_variances(pca_variances(matrix))


def partition_isotropy(matrix: np.ndarray) -> float:
    """Mu & Viswanath's min/max ratio of the partition function over the eigenvectors of X^T X."""
    from scipy.special import logsumexp  # lazy: scipy loads only where it is used

    x = _as_matrix(matrix)
    _, vecs = np.linalg.eigh(x.T @ x)
    log_z = logsumexp(x @ vecs, axis=0)  # one value per eigenvector c
    return float(np.exp(log_z.min() - log_z.max()))


def _effective_rank_from_variances(var: np.ndarray) -> float:
    s = np.sqrt(var)  # singular values of the centred matrix, up to a common factor
    total = s.sum()
    if total <= 0:
        return float("nan")
    p = s[s > 0] / total
    return float(np.exp(-(p * np.log(p)).sum()))


def effective_rank(matrix: np.ndarray) -> float:
    """exp(entropy of the normalised singular values of the centred matrix)."""
    return _effective_rank_from_variances(pca_variances(matrix))


def entry_space_stats(matrix: np.ndarray, *, n_pairs: int = 100_000, seed: int = 0) -> dict[str, float | int]:
    """All statistics of one entry matrix, as stored in the ``entry_space_stats`` table.

    Example:
        >>> entry_space_stats(np.random.default_rng(0).normal(size=(2000, 16)))["isoscore"]  # close to 1
    """
    x = _as_matrix(matrix)
    var = pca_variances(x)
    total = var.sum()
    return {
        "n_entries": int(x.shape[0]),
        "dim": int(x.shape[1]),
        "avg_cosine": avg_cosine(x, n_pairs=n_pairs, seed=seed),
        "top1_var_share": float(var[0] / total) if total > 0 else float("nan"),
        "isoscore": isoscore_from_variances(var),
        "partition_isotropy": partition_isotropy(x),
        "effective_rank": _effective_rank_from_variances(var),
        "mean_norm": float(np.linalg.norm(x, axis=1).mean()),
    }
