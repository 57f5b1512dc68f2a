"""scripts/convert/chinook.py builds the Chinook sample database (docs/relational_example.md) from its pinned source
the same way every time, and its SQLite file read with format: sql gives the graph its CSV export gives with
format: tables, to the last bit; the label's own table (Genre) is no node type, so no relation gives it away."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import torch

from conftest import REPO
from regnn.data.custom import load_custom


def build(out):
    script = REPO / "scripts" / "convert" / "chinook.py"
    subprocess.run([sys.executable, str(script), "--out", str(out)], check=True, capture_output=True, text=True)
    return hashlib.sha256((out / "sql" / "chinook.sqlite").read_bytes()).hexdigest()


def test_chinook_builds_the_same_database_and_its_csv_export_reads_the_same(tmp_path):
    assert build(tmp_path / "a") == build(tmp_path / "b")
    a = load_custom(tmp_path / "a" / "sql" / "dataset.yaml")
    b = load_custom(tmp_path / "a" / "tables" / "dataset.yaml")
    assert a.graph.ntypes == b.graph.ntypes and "Genre" not in a.graph.ntypes
    assert a.graph.canonical_etypes == b.graph.canonical_etypes
    assert ("Playlist", "PlaylistTrack", "Track") in a.graph.canonical_etypes  # a link table is a relation
    for et in a.graph.canonical_etypes:
        assert all(torch.equal(x, y) for x, y in zip(a.graph.edges(etype=et), b.graph.edges(etype=et))), et
    for t in a.features:
        x, y = (d.features[t].to_dense().contiguous().numpy().view(np.uint32) for d in (a, b))
        assert np.array_equal(x, y) and np.array_equal(a.node_ids[t], b.node_ids[t]), t
    assert a.feature_names == b.feature_names and a.class_names == b.class_names
    assert torch.equal(a.labels, b.labels) and all(torch.equal(a.splits[s], b.splits[s]) for s in a.splits)
    assert len(a.class_names) == 20 and a.graph.num_nodes("Track") == 3503
