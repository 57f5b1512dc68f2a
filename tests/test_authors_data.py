"""scripts/convert/authors_data.py writes this repository's data in the layout the authors' run_regnn.py reads; its
relation ids must describe the graph regnn builds: the same edges, one relation per ordered pair of node types (ACM's
citations one relation, as the authors' preprocessing had them, where regnn has cites and cited-by), and one typed
self-loop per node."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from conftest import REPO, real_dataset_dir
from regnn.data import load_dataset
from regnn.data.relation_graph import build_relation_graph


@pytest.mark.slow  # an evidence tool's check, not the package's
def test_authors_layout_has_regnns_relations(tmp_path):
    data_dir = real_dataset_dir("ACM")
    p = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "convert" / "authors_data.py"),
            "--dataset",
            "ACM",
            "--data-dir",
            str(data_dir),
            "--repo",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    out = tmp_path / "data" / "preprocessed" / "ACM_processed"
    adjmm = sp.load_npz(out / "adjMM_rgcn.npz").tocoo()
    wsl = sp.load_npz(out / "adjMM_wsl_2.npz").tocsr()
    types = np.load(out / "node_types.npy")
    k = int(adjmm.data.max())
    rg = build_relation_graph(load_dataset(name="acm", dir=data_dir))
    assert k == rg.num_edge_relations - 1 and sorted(np.unique(adjmm.data)) == list(range(1, k + 1))
    edges = rg.src != rg.dst  # distinct node pairs: a mutual citation is two parallel edges in regnn, one here
    pairs = torch.unique(torch.stack([rg.src[edges], rg.dst[edges]]), dim=1).shape[1]
    assert adjmm.nnz == pairs > sp.load_npz(data_dir / "adjM.npz").nnz
    assert np.array_equal(wsl.diagonal(), k + 1 + types)  # the relation of a node's self-loop: its type
    # every edge of one relation joins the same ordered pair of node types
    pairs = {(int(types[u]), int(types[v])) for u, v in zip(adjmm.row, adjmm.col)}
    assert len(pairs) == k
