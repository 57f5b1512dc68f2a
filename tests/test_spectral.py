"""The spectral embedding (MAGNN-AC's topological inputs) is one matrix whatever computes it: the canonical basis
of each group of equal singular values, the same from any rotation of that group, from the dense and the randomised
path, from any start vector, and under every OpenBLAS kernel this CPU runs."""

import functools
import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from regnn.models.baselines import spectral
from regnn.models.baselines.spectral import canonical_basis, spectral_embedding


def normalised_bipartite(n_left, n_right, edges, seed, components=3):
    """D^-1/2 A D^-1/2 of a random bipartite graph made of `components` disjoint copies (repeated singular values:
    +-s pairs, and 1 once per component and side)."""
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(components):
        u, v = rng.integers(0, n_left, edges), rng.integers(0, n_right, edges)
        b = sp.coo_matrix((np.ones(edges), (u, v)), shape=(n_left, n_right)).tocsr()
        blocks.append(sp.bmat([[None, b], [b.T, None]]))
    a = (sp.block_diag(blocks).tocsr() > 0).astype(np.float64)
    d = np.asarray(a.sum(1)).ravel()
    inv = sp.diags(np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-12)), 0.0))
    return (inv @ a @ inv).tocsr()


def test_the_canonical_basis_is_the_same_from_any_basis_of_the_subspace():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(50, 4)))
    r, _ = np.linalg.qr(rng.normal(size=(4, 4)))  # a rotation (and reflection) inside the subspace
    a, b = canonical_basis(q), canonical_basis(q @ r)
    assert np.allclose(a, b, atol=1e-12)
    assert np.allclose(a.T @ a, np.eye(4), atol=1e-12) and np.allclose(a @ a.T, q @ q.T, atol=1e-12)
    assert not np.allclose(q, q @ r, atol=1e-3)  # the two inputs did differ


def test_dense_and_randomised_paths_and_any_random_state_give_the_same_embedding(monkeypatch):
    m = normalised_bipartite(40, 60, 150, seed=1)
    dense, s = spectral_embedding(m, 10, seed=0)
    assert np.isclose(s[0], 1.0) and np.allclose(s[:6], 1.0)  # three components, two sides each
    # U S U^T over whole groups is what the SVD defines: it equals numpy's dense SVD
    u, sv, _ = np.linalg.svd(m.toarray())
    k = 10 if not np.isclose(sv[9], sv[10], rtol=1e-4) else 8
    assert np.allclose(dense[:, :k] @ dense[:, :k].T, (u[:, :k] * sv[:k]) @ u[:, :k].T, atol=1e-10)
    monkeypatch.setattr(spectral, "DENSE_MAX", 10)  # the randomised path, from two random states
    for seed in (0, 7):
        sparse, s2 = spectral_embedding(m, 10, seed=seed)
        assert np.allclose(s, s2, atol=1e-8) and np.allclose(dense, sparse, atol=1e-6)


PROBE = """
import json, sys
import numpy as np
from test_spectral import normalised_bipartite
from regnn.models.baselines import spectral
spectral.DENSE_MAX = int(sys.argv[1])
emb, _ = spectral.spectral_embedding(normalised_bipartite(300, 500, 1500, seed=2), 12)
print(json.dumps(emb.tolist()))
"""


def _env(kind):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    return env | ({"OPENBLAS_CORETYPE": kind} if kind else {})


@functools.lru_cache(maxsize=None)
def _kernels():
    """OpenBLAS core types this CPU can run (SkylakeX where it has AVX-512), and its own choice (None); less those
    under which numpy's own OpenBLAS fails on a plain eigendecomposition here (some builds crash on a forced core
    type): those are numpy's, not the embedding's."""
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    kinds = ["Haswell"] + (["SkylakeX"] if " avx512f" in flags else ["Sandybridge"]) + [None]
    probe = "import numpy as np; a = np.random.default_rng(0).random((800, 800)); np.linalg.eigh(a + a.T)"
    return [
        k
        for k in kinds
        if subprocess.run([sys.executable, "-c", probe], env=_env(k), capture_output=True, timeout=120).returncode == 0
    ]


@pytest.mark.onepython
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS core types named for x86-64")
@pytest.mark.parametrize("dense_max", [5000, 10], ids=["dense", "randomised"])
def test_the_embedding_does_not_depend_on_the_blas_kernels(dense_max):
    """What changed MAGNN-AC's inputs from one machine to the next: each OpenBLAS core type, forced."""
    out = {}
    assert len(_kernels()) >= 2, "fewer than two OpenBLAS core types run numpy here: nothing to compare"
    for kind in _kernels():
        p = subprocess.run(
            [sys.executable, "-c", PROBE, str(dense_max)],
            capture_output=True,
            text=True,
            env=_env(kind),
            cwd=os.path.dirname(__file__),
            timeout=300,
        )
        assert p.returncode == 0, p.stderr[-2000:]
        out[kind] = np.array(json.loads(p.stdout))
    first = out[_kernels()[0]]
    for kind, emb in out.items():
        assert np.allclose(emb, first, atol=1e-6), kind
