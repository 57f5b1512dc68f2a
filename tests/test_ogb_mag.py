"""ogbn-mag through ogb's own DGL loader, on a generated graph in OGB's on-disk layout with the same schema."""

import shutil
import urllib.error

import numpy as np
import pytest
import torch

from regnn.data import load_dataset
from regnn.data.hetero import HeteroGraph
from regnn.data.ogb import load_ogb, mean_neighbour_features
from regnn.data.ogb_format import MAG_EDGES, MAG_NODES, write_ogb_mag_like
from regnn.errors import DataError
from regnn.models.sampled import NodeInputs


def test_generated_graph_has_the_schema_and_official_split(mag_root):
    d = load_dataset("ogbn_mag", dir=str(mag_root), format="ogb", ogb_name="ogbn-mag")
    g = d.graph
    assert sorted(g.ntypes) == sorted(MAG_NODES) and d.target == "paper" and d.num_classes == 349
    # every relation in both directions, each its own type
    for h, r, t in MAG_EDGES:
        assert g.num_edges((h, r, t)) == g.num_edges((t, f"rev_{r}", h)) > 0
        u, v = g.edges(etype=(h, r, t))
        ru, rv = g.edges(etype=(t, f"rev_{r}", h))
        assert torch.equal(u, rv) and torch.equal(v, ru)
    assert len(g.canonical_etypes) == 8
    assert d.in_dims == {t: 128 for t in MAG_NODES}  # paper word2vec size; the rest by default mean features
    sizes = [len(d.splits[s]) for s in ("train", "val", "test")]
    assert sum(sizes) == g.num_nodes("paper") and sizes[0] > 5 * sizes[1] > 0 and sizes[2] > 0
    assert int(d.labels.max()) < 5  # the generator used 5 of the 349 venues


def test_mean_features_average_the_featured_neighbours(mag_root):
    d = load_dataset("ogbn_mag", dir=str(mag_root), format="ogb", ogb_name="ogbn-mag", featureless="mean")
    g, x = d.graph, d.features
    papers, authors = g.edges(etype="rev_writes")  # paper -> author
    for a in range(5):
        mine = papers[authors == a]
        want = x["paper"][mine].mean(0) if mine.numel() else torch.zeros(128)
        assert torch.allclose(x["author"][a], want, atol=1e-5)
    # institutions have no paper neighbours: the mean of their authors' (already averaged) features
    u, v = g.edges(etype="affiliated_with")  # author -> institution
    assert torch.allclose(x["institution"][0], x["author"][u[v == 0]].mean(0), atol=1e-5)


def test_mean_features_refuse_unreachable_types():
    g = HeteroGraph({("a", "r", "b"): ([0], [0]), ("c", "s", "c"): ([0], [0])}, {"a": 1, "b": 1, "c": 1})
    with pytest.raises(DataError, match=r"\['c'\] have no path to a node type with features"):
        mean_neighbour_features(g, {"a": torch.ones(1, 3)})


def test_feature_file_and_its_errors(mag_root, tmp_path):
    d = load_dataset("ogbn_mag", dir=str(mag_root), format="ogb", ogb_name="ogbn-mag")
    n = {t: d.graph.num_nodes(t) for t in d.graph.ntypes}
    emb = {
        t: np.random.default_rng(0).normal(size=(n[t], 16)).astype(np.float32)
        for t in ("author", "institution", "field_of_study")
    }
    np.savez(tmp_path / "m2v.npz", **emb)
    f = load_ogb("ogbn-mag", mag_root, featureless="file", feature_file=tmp_path / "m2v.npz")
    assert f.in_dims == {"paper": 128, "author": 16, "institution": 16, "field_of_study": 16}
    assert np.allclose(f.features["author"].numpy(), emb["author"])
    torch.save({t: torch.from_numpy(v) for t, v in emb.items()}, tmp_path / "m2v.pt")
    assert load_ogb("ogbn-mag", mag_root, featureless="file", feature_file=tmp_path / "m2v.pt").in_dims["author"] == 16
    np.savez(tmp_path / "partial.npz", author=emb["author"])
    with pytest.raises(DataError, match="no features for node type 'field_of_study'"):
        load_ogb("ogbn-mag", mag_root, featureless="file", feature_file=tmp_path / "partial.npz")
    np.savez(tmp_path / "short.npz", **(emb | {"author": emb["author"][:-1]}))
    with pytest.raises(DataError, match=f"shape \\({n['author'] - 1}, 16\\), but there are {n['author']} author"):
        load_ogb("ogbn-mag", mag_root, featureless="file", feature_file=tmp_path / "short.npz")
    with pytest.raises(DataError, match="does not exist"):
        load_ogb("ogbn-mag", mag_root, featureless="file", feature_file=tmp_path / "none.npz")
    with pytest.raises(DataError, match="featureless=file needs dataset.feature_file"):
        load_ogb("ogbn-mag", mag_root, featureless="file")
    with pytest.raises(DataError, match="featureless='avg' is not one of"):
        load_ogb("ogbn-mag", mag_root, featureless="avg")


def test_learnable_choice_becomes_sparse_embeddings(mag_root):
    d = load_ogb("ogbn-mag", mag_root, featureless="learnable")
    assert d.in_dims["paper"] == 128 and d.in_dims["author"] == d.graph.num_nodes("author")  # one-hot ids
    inputs = NodeInputs(d.features, embed_dim=24)
    assert sorted(inputs.embeddings) == ["author", "field_of_study", "institution"]
    assert inputs.in_dims == {"paper": 128, "author": 24, "institution": 24, "field_of_study": 24}
    assert all(e.sparse for e in inputs.embeddings.values())


def test_no_data_and_no_network_is_a_clear_error(tmp_path, monkeypatch):
    import ogb.nodeproppred.dataset as dd

    def offline(url):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(dd, "decide_download", offline)
    with pytest.raises(DataError, match="is not under .* and could not be downloaded .*copy the ogbn_mag/ folder"):
        load_ogb("ogbn-mag", tmp_path)
    with pytest.raises(DataError, match="no data folder given; set dataset.dir"):
        load_ogb("ogbn-mag", None)
    with pytest.raises(DataError, match="not an OGB node-property dataset"):
        load_ogb("ogbn-nothing", tmp_path)


def test_stale_folder_is_refused_instead_of_prompting(mag_root, tmp_path):
    shutil.copytree(mag_root / "ogbn_mag", tmp_path / "ogbn_mag")
    (tmp_path / "ogbn_mag" / "RELEASE_v2.txt").unlink()
    with pytest.raises(DataError, match="no RELEASE_v2.txt"):
        load_ogb("ogbn-mag", tmp_path)


def test_generator_scales_counts():
    # full-scale counts are OGBN-MAG's; a fraction scales every count (duplicates removed, so edges may fall short)
    assert sum(MAG_NODES.values()) == 1_939_743 and sum(MAG_EDGES.values()) == 21_111_007


def test_generator_writes_requested_scale(tmp_path):
    info = write_ogb_mag_like(tmp_path, scale=0.001, num_label_classes=3, seed=1)
    assert info["nodes"]["paper"] == round(MAG_NODES["paper"] * 0.001)
    for k, m in info["edges"].items():
        want = MAG_EDGES[tuple(k.split("___"))] * 0.001
        assert 0.8 * want <= m <= want + 1
