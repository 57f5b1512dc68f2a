"""Loader on the three real datasets, and every bad input named clearly."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from conftest import real_dataset_dir
from regnn.data import build_relation_graph, builtin_spec, load_dataset, load_magnn
from regnn.errors import DataError

EXPECTED = {
    # nodes per type, edges per relation (one direction), target, classes, split sizes; as in these files
    # (the paper's table lists 4278 movies and 12828 M-A edges for its slightly different IMDB version)
    "DBLP": (
        {"author": 4057, "paper": 14328, "term": 7723, "venue": 20},
        {"author->paper": 19645, "paper->term": 85810, "paper->venue": 14328},
        "author",
        4,
        (400, 400, 3257),
    ),
    "ACM": (
        {"paper": 4019, "author": 7167, "subject": 60},
        {"paper-cites->paper": 9615, "paper->author": 13407, "paper->subject": 4019},
        "paper",
        3,
        (400, 400, 3219),
    ),
    "IMDB": (
        {"movie": 4274, "director": 2079, "actor": 5252},
        {"movie->director": 4274, "movie->actor": 12822},
        "movie",
        3,
        (396, 400, 3478),
    ),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_real_dataset_shapes_and_relations(name):
    nodes, edges, target, classes, split = EXPECTED[name]
    spec = builtin_spec(name)
    data = load_magnn(real_dataset_dir(name), spec)
    g = data.graph
    assert {t: g.num_nodes(t) for t in g.ntypes} == nodes
    assert data.target == target and data.num_classes == classes
    assert tuple(len(data.splits[s]) for s in ("train", "val", "test")) == split
    counts = {et: g.num_edges(et) for et in g.etypes}
    assert len(counts) == 2 * len(edges)  # every relation in both directions, each its own type
    for rel, n in edges.items():
        assert counts[rel] == n
    for r in spec.relations:  # the reverse relation is the exact transpose
        u, v = g.edges(etype=r.name)
        ru, rv = g.edges(etype=r.reverse)
        assert sorted(zip(u.tolist(), v.tolist())) == sorted(zip(rv.tolist(), ru.tolist()))
    rg = build_relation_graph(data)
    assert rg.num_relations == 2 * len(edges) + len(nodes)
    assert rg.num_nodes == sum(nodes.values())
    # every node has exactly one self-loop, typed by its node type
    self_ids = torch.arange(rg.num_edge_relations, rg.num_relations)
    is_self = torch.isin(rg.rel, self_ids)
    u, v = rg.src, rg.dst
    assert torch.equal(u[is_self], v[is_self]) and is_self.sum() == rg.num_nodes
    assert torch.equal(rg.rel[is_self] - rg.num_edge_relations, rg.node_type[u[is_self]])


def test_feature_choices_and_sparsity():
    dblp = load_magnn(real_dataset_dir("DBLP"), builtin_spec("dblp"))  # raw: every type its own features
    assert dblp.in_dims == {"author": 451, "paper": 4233, "term": 50, "venue": 20}
    assert dblp.features["paper"].is_sparse and dblp.features["author"].is_sparse  # BOW stays sparse
    assert not dblp.features["term"].is_sparse  # dense GloVe
    assert torch.equal(dblp.features["venue"].to_dense(), torch.eye(20))  # no features: one-hot ids
    acm = load_magnn(real_dataset_dir("ACM"), builtin_spec("acm"))  # authors' default: target_onehot
    assert acm.in_dims == {"paper": 4000, "author": 7167, "subject": 60}
    imdb = load_magnn(real_dataset_dir("IMDB"), builtin_spec("imdb"))  # authors' default: target_zeros
    assert imdb.in_dims == {"movie": 3065, "director": 10, "actor": 10}
    assert imdb.features["actor"].abs().sum() == 0
    imdb_raw = load_magnn(real_dataset_dir("IMDB"), builtin_spec("imdb"), feats_type=0)  # authors' code 0
    assert imdb_raw.in_dims == {"movie": 3065, "director": 3065, "actor": 3065}


def test_load_dataset_verifies_checksums_of_the_real_files():
    data = load_dataset("imdb", dir=real_dataset_dir("IMDB"), verify=True)
    assert data.graph.num_nodes("movie") == 4274


# ---- bad input ----------------------------------------------------------------------------------------------


def _load(d, **kw):
    return load_magnn(d, builtin_spec("imdb"), **kw)


def test_unknown_dataset_name():
    with pytest.raises(DataError, match=r"unknown dataset 'cora'.*built-in datasets: \['acm', 'dblp', 'imdb'\]"):
        builtin_spec("cora")


def test_missing_data_dir(tmp_path):
    with pytest.raises(DataError, match="does not exist; run `make data`"):
        _load(tmp_path / "nowhere")


def test_missing_file(imdb_copy):
    (imdb_copy / "labels.npy").unlink()
    with pytest.raises(DataError, match=r"labels.npy is missing; run `make data`"):
        _load(imdb_copy)


def test_checksum_mismatch_is_reported_before_reading(imdb_copy):
    with open(imdb_copy / "labels.npy", "r+b") as f:
        f.seek(-4, 2)
        f.write(b"\x00\x00\x00\x07")  # still a loadable array, silently different content
    with pytest.raises(DataError, match=r"labels.npy differs from its pinned checksum.*make data FORCE=1"):
        load_dataset("imdb", dir=imdb_copy, verify=True)


@pytest.mark.parametrize("name", ["adjM.npz", "features_0.npz", "node_types.npy", "train_val_test_idx.npz"])
def test_truncated_file(imdb_copy, name):
    p = imdb_copy / name
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(DataError, match=rf"{name} cannot be read .*truncated or corrupt"):
        _load(imdb_copy)


def test_labels_out_of_range(imdb_copy):
    y = np.load(imdb_copy / "labels.npy")
    y[5] = 7
    np.save(imdb_copy / "labels.npy", y)
    with pytest.raises(DataError, match=r"labels range over \[0, 7\] but there are 3 classes"):
        _load(imdb_copy)


def test_wrong_number_of_labels(imdb_copy):
    np.save(imdb_copy / "labels.npy", np.load(imdb_copy / "labels.npy")[:-3])
    with pytest.raises(DataError, match=r"\(4271,\) labels for 4274 movie nodes"):
        _load(imdb_copy)


def _rewrite_split(d, **change):
    s = dict(np.load(d / "train_val_test_idx.npz"))
    s.update(change)
    np.savez(d / "train_val_test_idx.npz", **s)
    return s


def test_split_index_out_of_range(imdb_copy):
    s = dict(np.load(imdb_copy / "train_val_test_idx.npz"))
    _rewrite_split(imdb_copy, test_idx=np.append(s["test_idx"], 99999))
    with pytest.raises(DataError, match=r"split 'test' holds ids in \[0, 99999\] but there are only 4274"):
        _load(imdb_copy)


def test_overlapping_splits(imdb_copy):
    s = dict(np.load(imdb_copy / "train_val_test_idx.npz"))
    _rewrite_split(imdb_copy, val_idx=np.append(s["val_idx"], s["train_idx"][:3]))
    with pytest.raises(DataError, match=r"splits 'train' and 'val' overlap in 3 nodes"):
        _load(imdb_copy)


def test_missing_split_array(imdb_copy):
    s = dict(np.load(imdb_copy / "train_val_test_idx.npz"))
    np.savez(imdb_copy / "train_val_test_idx.npz", train_idx=s["train_idx"], test_idx=s["test_idx"])
    with pytest.raises(DataError, match="must hold arrays train_idx, val_idx and test_idx"):
        _load(imdb_copy)


def test_feature_rows_disagree_with_node_count(imdb_copy):
    x = sp.load_npz(imdb_copy / "features_1.npz")
    sp.save_npz(imdb_copy / "features_1.npz", x[:-1])
    with pytest.raises(
        DataError,
        match=r"features_1.npz: feature matrix of shape \(2078, 3065\) but there are 2079 "
        r"director nodes",
    ):
        _load(imdb_copy, feats_type="raw")


def test_adjacency_size_disagrees_with_node_types(imdb_copy):
    np.save(imdb_copy / "node_types.npy", np.load(imdb_copy / "node_types.npy")[:-1])
    with pytest.raises(DataError, match=r"adjM.npz is \(11605, 11605\) but node_types.npy lists 11604 nodes"):
        _load(imdb_copy)


def test_edges_no_relation_covers(imdb_copy):
    a = sp.load_npz(imdb_copy / "adjM.npz").tolil()
    a[4274, 4274 + 2079] = 1  # director -> actor: not a relation of IMDB
    sp.save_npz(imdb_copy / "adjM.npz", a.tocsr())
    with pytest.raises(DataError, match=r"1 edges join node types 'director' and 'actor', which no relation"):
        _load(imdb_copy)
