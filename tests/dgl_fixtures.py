"""Loads the float64 fixtures written from DGL's modules by tests/make_dgl_fixtures.py
(tests/fixtures/dgl_<name>.npz)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def random_multigraph(n=12, e=40, num_rel=4, seed=0, shuffle=True):
    """(src, dst, rel) of a random multigraph of n nodes; sorted by (destination, source) unless shuffle. The core's
    fixtures are written on these graphs, and tests/test_layers.py builds its own with it."""
    g_ = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=g_), torch.randint(0, n, (e,), generator=g_)
    rel = torch.randint(0, num_rel, (e,), generator=g_)
    if not shuffle:
        order = torch.argsort(dst * n + src)
        src, dst, rel = src[order], dst[order], rel[order]
    return src, dst, rel


def load_fixture(name: str) -> dict[str, torch.Tensor]:
    """The fixture's arrays as torch tensors (float64 / int64). A missing file is a failure, not a skip: the
    fixtures are committed, and
    `python tests/make_dgl_fixtures.py NAME` writes one where DGL is installed."""
    path = FIXTURES / f"dgl_{name}.npz"
    assert path.is_file(), f"{path} is missing: run `PYTHONPATH=src python tests/make_dgl_fixtures.py {name}` with DGL"
    with np.load(path, allow_pickle=False) as z:
        return {k: torch.from_numpy(z[k]) for k in z.files}


def assert_close(ours: torch.Tensor, theirs: torch.Tensor, what: str, tol: float = 1e-10) -> None:
    ours = ours.detach().to(torch.float64)
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} vs DGL's {tuple(theirs.shape)}"
    err = (ours - theirs).abs().max().item() if ours.numel() else 0.0
    assert err <= tol * max(1.0, theirs.abs().max().item()), f"{what}: max abs difference {err:.3e} from DGL's"
