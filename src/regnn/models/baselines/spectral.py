"""A spectral embedding that is the same matrix on every machine: U sqrt(S) of the rank-k SVD of a symmetric matrix.

A truncated SVD is defined only up to a rotation inside each group of equal singular values, and a sign for each
column. Graphs have many such groups: a bipartite graph (DBLP's papers against authors, terms and venues) has every
singular value of its normalised adjacency twice (eigenvalues +s and -s), and every connected component adds one
more eigenvalue of modulus 1. A float32 randomised SVD returns whichever rotation the machine's BLAS kernels lead to,
so the embedding (and every model that reads it) changed with the CPU.

Here the decomposition is float64: exact (a dense eigendecomposition) for small matrices, a randomised block SVD with
many power iterations otherwise; singular values that agree to a relative 1e-4 form one group, and each group's subspace
gets one canonical orthonormal basis, built from the group's projector alone (canonical_basis). Anything that spans the
same subspace gives the same basis, so the result depends on the graph alone, up to the decomposition's accuracy.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

DENSE_MAX = 3000  # nodes up to which a dense float64 eigendecomposition is cheap (~1 s)
GROUP_RTOL = 1e-4  # singular values this close (relative to the largest) form one group
PIVOT_SHARE = 0.5  # a pivot's weight, at least this share of the largest (canonical_basis)
EXTRA = 8  # singular pairs beyond k, so that a group cut at k is still seen whole
POWER_ITERATIONS = 100  # the randomised SVD's, for graphs over DENSE_MAX nodes (DBLP: about 12 s)


def canonical_basis(q: np.ndarray) -> np.ndarray:
    """The canonical orthonormal basis (n, m) of the span of q's m orthonormal columns: a pivoted Cholesky
    factorisation of the projector P = q q^T, which depends on the subspace alone. Each step takes as pivot the first
    node (in node order) whose diagonal entry of P is at least PIVOT_SHARE of the largest, adds the unit vector
    P e_j / sqrt(P_jj) (positive at node j), and removes it from P. A well-sized pivot, not the largest one, so that
    rounding cannot swap two near-equal candidates."""
    q = np.array(q, dtype=np.float64)
    out = []
    for _ in range(q.shape[1]):
        weight = np.einsum("ij,ij->i", q, q)  # diag(P)
        if weight.max() <= 1e-12:
            break
        j = int(np.flatnonzero(weight >= PIVOT_SHARE * weight.max())[0])
        c = q[j] / np.sqrt(weight[j])  # P e_j / sqrt(P_jj) = q c, with c a unit vector of R^m
        out.append(q @ c)
        q -= np.outer(out[-1], c)  # now q q^T = P - p p^T
    return np.stack(out, axis=1) if out else np.zeros((q.shape[0], 0))


def _singular_pairs(m: sp.spmatrix, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The `count` largest singular values of the symmetric m, decreasing, and their left singular vectors."""
    n = m.shape[0]
    if n <= DENSE_MAX:
        vals, vecs = np.linalg.eigh(m.toarray() if sp.issparse(m) else np.asarray(m))
        order = np.argsort(-np.abs(vals), kind="stable")[:count]
        return np.abs(vals[order]), vecs[:, order]
    from sklearn.utils.extmath import randomized_svd

    # a block method (a single-vector one such as ARPACK's Lanczos misses repeated values); float64, with enough
    # oversampling and power iterations that the groups are resolved far below GROUP_RTOL
    left, s, _ = randomized_svd(
        m.astype(np.float64), count, n_oversamples=max(10, count), n_iter=POWER_ITERATIONS, random_state=seed
    )
    return s, left


def spectral_embedding(m: sp.spmatrix, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(U sqrt(S) with k columns in the canonical basis of each group of equal singular values, the k singular
    values) of the symmetric matrix m, singular values in decreasing order."""
    n = m.shape[0]
    s, vecs = _singular_pairs(m, min(n, k + EXTRA), seed)
    out = np.zeros_like(vecs)
    start, scale = 0, max(float(s[0]) if s.size else 0.0, 1e-300)
    while start < s.size:
        stop = start + 1
        while stop < s.size and s[start] - s[stop] <= GROUP_RTOL * scale:
            stop += 1
        basis = canonical_basis(vecs[:, start:stop])
        out[:, start : start + basis.shape[1]] = basis
        s[start:stop] = s[start:stop].mean()  # one value for the group: its columns are interchangeable
        start = stop
    return out[:, :k] * np.sqrt(s[:k]), s[:k]
