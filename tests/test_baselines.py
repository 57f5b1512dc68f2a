"""Heterogeneous baselines: meta-path graphs against dense products, GTN's sparse chain against its dense form,
every baseline learning the planted signal of the synthetic graph through its config, GCN-M's meta-path pick."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from conftest import cfg, fullbatch
from regnn.core.adjacency import Adjacency
from regnn.data.hetero import HeteroGraph
from regnn.errors import ConfigError
from regnn.models.baselines import metapath_adjacency, metapath_graph, metapath_graphs
from regnn.models.baselines.gtn import composite_propagate
from regnn.models.baselines.inputs import TypedGraph
from regnn.models.baselines.metapath import metapath_relation_graph
from regnn.pipeline import arch_of, build_model, load_data, model_kwargs, train
from regnn.training.seed import seed_everything
from regnn.training.trainer import train_run

BASELINES = ["rgcn", "hgt", "simple_hgn", "gtn", "han", "gcn_m", "gat_m"]
# narrower versions of the two widest models keep their test at a few seconds (the code path is the same)
SMALL = {
    "hgt": ["model.hidden=16", "model.heads=2"],
    "simple_hgn": ["model.hidden=32", "model.heads=2", "model.edge_dim=16", "model.num_layers=1"],
}


def tiny_academic(seed=0):
    """4 authors, 6 papers, 3 terms, 2 venues with random links (and one duplicated author-paper edge)."""
    rng = np.random.default_rng(seed)
    ap = [(a, p) for a in range(4) for p in range(6) if rng.random() < 0.4] + [(0, 0), (0, 0)]
    pt = [(p, t) for p in range(6) for t in range(3) if rng.random() < 0.5]
    pv = [(p, int(rng.integers(0, 2))) for p in range(5)]  # paper 5 has no venue
    t = lambda pairs, i: torch.tensor([x[i] for x in pairs])  # noqa: E731
    return HeteroGraph(
        {
            ("author", "author->paper", "paper"): (t(ap, 0), t(ap, 1)),
            ("paper", "paper->author", "author"): (t(ap, 1), t(ap, 0)),
            ("paper", "paper->term", "term"): (t(pt, 0), t(pt, 1)),
            ("term", "term->paper", "paper"): (t(pt, 1), t(pt, 0)),
            ("paper", "paper->venue", "venue"): (t(pv, 0), t(pv, 1)),
            ("venue", "venue->paper", "paper"): (t(pv, 1), t(pv, 0)),
        },
        {"author": 5, "paper": 6, "term": 3, "venue": 2},
    )  # author 4 has no paper


def dense(g, rel):
    s, _, d = g.to_canonical_etype(rel)
    m = np.zeros((g.num_nodes(s), g.num_nodes(d)))
    u, v = g.edges(etype=rel)
    m[u.numpy(), v.numpy()] = 1.0  # parallel edges count once
    return m


@pytest.mark.parametrize(
    "path",
    [
        ["author->paper", "paper->author"],
        ["author->paper", "paper->venue", "venue->paper", "paper->author"],
        ["author->paper", "paper->term", "term->paper", "paper->author"],
        ["author->paper", "paper->term", "term->paper"],  # odd length, different end type
        ["paper->venue"],
    ],
)
def test_metapath_adjacency_matches_dense_product(path):
    g = tiny_academic()
    want = dense(g, path[0])
    for r in path[1:]:
        want = want @ dense(g, r)
    got = metapath_adjacency(g, path).toarray()
    np.testing.assert_array_equal(got, want)  # path-instance counts


def test_metapath_graph_is_the_binarised_product_with_one_self_loop_per_node():
    g = tiny_academic()
    path = ["author->paper", "paper->venue", "venue->paper", "paper->author"]
    want = (dense(g, path[0]) @ dense(g, path[1]) @ dense(g, path[2]) @ dense(g, path[3])) > 0
    mg = metapath_graph(g, path)
    got = np.zeros_like(want, dtype=int)
    u, v = mg.indices, mg.dst_of  # CSR order
    np.add.at(got, (u.numpy(), v.numpy()), 1)
    np.fill_diagonal(want, True)
    np.testing.assert_array_equal(got, want.astype(int))  # every pair once, every node one self-loop
    assert got[4].sum() == 1  # the author without papers only reaches itself
    no_loops = metapath_graph(g, path, self_loops=False)
    assert not (no_loops.indices == no_loops.dst_of).any()


@pytest.mark.parametrize(
    "path,message",
    [
        (["author->paper", "paper->author2"], "unknown relations \\['paper->author2'\\]"),
        (["author->paper", "term->paper"], "does not chain: 'author->paper' ends at 'paper' but 'term->paper'"),
        ([], "must be a non-empty list"),
    ],
)
def test_bad_metapaths_are_refused_with_the_reason(path, message):
    with pytest.raises(ValueError, match=message):
        metapath_adjacency(tiny_academic(), path, "bad")


def test_metapath_models_need_paths_from_the_target_back_to_it():
    from regnn.data import make_synthetic

    data = make_synthetic(num_items=30, num_sources=15, num_tags=4)
    with pytest.raises(ValueError, match="runs 'item' -> 'source'"):
        metapath_graphs(data, {"IS": ["item->source"]})
    with pytest.raises(ValueError, match="not defined"):
        metapath_graphs(data, {"ISI": ["item->source", "source->item"]}, names=["XYZ"])
    rg = metapath_relation_graph(data, "ISI", ["item->source", "source->item"])
    src, dst = rg.src, rg.dst
    loops = src == dst
    assert (rg.rel[loops] == 1).all() and (rg.rel[~loops] == 0).all()
    assert torch.equal(torch.sort(src[loops]).values, torch.arange(30))  # exactly one self-loop per item
    assert rg.relation_names == ["ISI", "self:item"]


def test_gtn_sparse_chain_equals_the_dense_composite_adjacency():
    n, e = 9, 30
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)
    order = torch.argsort(dst * n + src)
    src, dst = src[order], dst[order]
    adj = Adjacency.from_edges(src, dst, None, n)
    ws = [torch.rand(e, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    y = torch.randn(n, 4, generator=gen, dtype=torch.float64, requires_grad=True)

    def mat(w):  # P[v, u] = weight of u -> v
        return torch.zeros(n, n, dtype=w.dtype).index_put((dst, src), w, accumulate=True)

    def rownorm(m):
        d = m.sum(1, keepdim=True)
        return torch.where(d > 0, m / d.clamp(min=1e-30), torch.zeros_like(m))

    m = rownorm(mat(ws[0]) @ mat(ws[1]) @ mat(ws[2]))  # N = D^-1 S_0 S_1 S_2
    want = (m + torch.eye(n, dtype=m.dtype)) @ y / (m.sum(1, keepdim=True) + 1)
    got = composite_propagate(adj, ws, y)
    torch.testing.assert_close(got, want)
    go = torch.randn_like(want)
    for a, b in zip(torch.autograd.grad(got, [y, *ws], go), torch.autograd.grad(want, [y, *ws], go)):
        torch.testing.assert_close(a, b)


def test_typed_graph_keeps_target_order_and_rgcn_normaliser():
    from regnn.data import make_synthetic

    data = make_synthetic(num_items=40, num_sources=20, num_tags=5)
    tg = TypedGraph.build(data)
    assert (tg.ntype[tg.target_nodes] == tg.ntypes.index("item")).all()
    assert torch.equal(tg.target_nodes, torch.arange(40) + tg.target_nodes.min())  # local order kept
    dst = tg.dst
    for r in range(len(tg.relation_names)):  # 1/c_{v,r}: the in-edges of v in relation r sum to 1
        sums = torch.zeros(tg.num_nodes).index_add_(0, dst[tg.etype == r], tg.rel_norm[tg.etype == r, 0])
        assert torch.allclose(sums[sums > 0], torch.ones(int((sums > 0).sum())))
    assert (tg.etype.diff() >= 0).all()  # edges grouped by relation, as DGL's to_homogeneous groups them


@pytest.fixture(scope="module")
def synthetic():
    return load_data(cfg("dataset=synthetic").dataset)


@pytest.mark.parametrize("model", BASELINES)
def test_every_baseline_learns_the_planted_signal_of_the_synthetic_graph(model, synthetic):
    c = cfg("dataset=synthetic", f"model={model}", *SMALL.get(model, []))
    if c.model.get("metapath") == "best":
        c = OmegaConf.merge(c, {"model": {"metapath": "ISI"}})
    inputs = arch_of(c.model).prepare(synthetic, "cpu", **model_kwargs(c.model))
    seed_everything(0)
    net = build_model(c.model, synthetic, inputs)
    r = train_run(
        net,
        inputs,
        synthetic.features,
        synthetic.labels,
        synthetic.splits,
        seed=0,
        options=fullbatch(max_epochs=60, patience=60, optimizer=OmegaConf.to_container(c.optimizer)),
    )
    majority = torch.bincount(synthetic.labels).max().item() / synthetic.labels.numel() * 100
    assert majority < 40
    # far above chance (the issue asks for "beats chance"; 70 leaves room for seeds and library versions)
    assert r.metrics["test_micro_f1"] >= 70.0, f"{model}: {r.metrics['test_micro_f1']:.1f} (chance {majority:.1f})"
    logits, emb = net(inputs, synthetic.features, embed=True)
    assert logits.shape == (synthetic.labels.numel(), synthetic.num_classes) and emb.shape[0] == logits.shape[0]


def test_simple_hgn_outputs_unit_norm_scores(synthetic):
    c = cfg("dataset=synthetic", "model=simple_hgn")
    inputs = arch_of(c.model).prepare(synthetic, "cpu")
    net = build_model(c.model, synthetic, inputs).eval()
    logits, _ = net(inputs, synthetic.features)
    torch.testing.assert_close(logits.norm(dim=1), torch.ones(logits.shape[0]))


@pytest.mark.parametrize("model", ["rgcn", "simple_hgn"])
def test_baselines_whose_last_layer_propagates_represent_nodes_by_its_output(model, synthetic):
    """Clustering and t-SNE see what the last hop made of a node: with one R-GCN layer, the representation of a
    target moves when only its neighbours' features move (the layer's input would not)."""
    extra = ["model.num_layers=1"] if model == "rgcn" else []
    c = cfg("dataset=synthetic", f"model={model}", *extra)
    inputs = arch_of(c.model).prepare(synthetic, "cpu")
    seed_everything(0)
    net = build_model(c.model, synthetic, inputs).eval()
    logits, emb = net(inputs, synthetic.features, embed=True)
    torch.testing.assert_close(emb, logits, rtol=0, atol=0)
    others = {t: (x if t == synthetic.target else x + 1.0) for t, x in synthetic.features.items()}
    _, moved = net(inputs, others, embed=True)
    assert (moved - emb).abs().max() > 1e-4


def test_simple_hgn_mixes_attention_of_the_layer_before_in_hidden_layers_only(synthetic):
    """HGB's residual attention: hidden layers from the second on get the previous layer's attention; the one-head
    output layer gets none (mixing 8-head attention into it broadcast it to 8 heads)."""
    c = cfg("dataset=synthetic", "model=simple_hgn", "model.num_layers=3")
    inputs = arch_of(c.model).prepare(synthetic, "cpu")
    net = build_model(c.model, synthetic, inputs).eval()
    seen = []
    for name, conv in [*((f"hidden{i}", m) for i, m in enumerate(net.convs)), ("out", net.out)]:
        conv.register_forward_pre_hook(
            lambda m, args, name=name: seen.append((name, len(args) > 2 and args[2] is not None))
        )
    net(inputs, synthetic.features)
    assert seen == [("hidden0", False), ("hidden1", True), ("hidden2", True), ("out", False)]


def test_gcn_m_best_trains_every_metapath_and_keeps_the_best_by_validation(tmp_path):
    c = cfg("dataset=synthetic", "model=gcn_m", "runs=1", "trainer.max_epochs=40", "trainer.patience=40")
    summary = train(c, tmp_path / "cell")
    scores = summary["metapath_scores"]
    assert set(scores) == {"ISI", "INI"}
    assert summary["metapath"] == max(scores, key=lambda n: scores[n]["val_micro_f1"]["mean"]) == "ISI"
    assert scores["ISI"]["test_micro_f1"]["mean"] > scores["INI"]["test_micro_f1"]["mean"] + 20
    on_disk = json.loads((tmp_path / "cell" / "results.json").read_text())
    assert on_disk["metrics"] == json.loads((tmp_path / "cell/metapaths/ISI/results.json").read_text())["metrics"]
    assert on_disk["model"] == "gcn_m" and on_disk["relation_names"] == ["ISI", "self:item"]
    with pytest.raises(ConfigError, match="model.metapath='XYZ' is not valid"):
        train(cfg("dataset=synthetic", "model=gcn_m", "model.metapath=XYZ", "runs=1"), tmp_path / "bad")


def test_gcn_m_can_choose_on_fewer_runs_and_extend_only_the_chosen_metapath(tmp_path):
    """model.metapath_select_runs=1 with runs=2: every meta-path trains one run, the chosen one (by validation)
    is extended to two with its first run kept; the others keep one; a re-run trains nothing."""
    args = (
        "dataset=synthetic",
        "model=gcn_m",
        "runs=2",
        "trainer.max_epochs=30",
        "trainer.patience=30",
        "model.metapath_select_runs=1",
        "resume=true",
    )
    summary = train(cfg(*args), tmp_path / "cell")
    assert summary["metapath"] == "ISI" and summary["runs"] == 2 and "first 1 runs" in summary["metapath_selected_by"]
    assert {n: s["runs"] for n, s in summary["metapath_scores"].items()} == {"ISI": 2, "INI": 1}
    isi = tmp_path / "cell/metapaths/ISI"
    assert sorted(p.name for p in (isi / "runs").iterdir()) == ["run_00", "run_01"]
    assert list((isi).glob("results.1runs.json"))  # the one-run summary of the choice, kept beside the extension
    assert sorted(p.name for p in (tmp_path / "cell/metapaths/INI/runs").iterdir()) == ["run_00"]
    first = json.loads((isi / "runs/run_00/results.json").read_text())
    assert train(cfg(*args), tmp_path / "cell")["metrics"] == summary["metrics"]  # resumed: nothing retrained
    assert json.loads((isi / "runs/run_00/results.json").read_text()) == first
    (tmp_path / "cell/results.json").unlink()  # interrupted after the extension, before the cell's summary
    again = train(cfg(*args), tmp_path / "cell")
    assert again["metapath"] == "ISI" and again["metrics"] == summary["metrics"]
    assert json.loads((isi / "runs/run_00/results.json").read_text()) == first
    # interrupted during the extension: the chosen meta-path's config asks for 2 runs, its summary is the 1-run one
    (tmp_path / "cell/results.json").unlink()
    (isi / "results.json").unlink()
    shutil.rmtree(isi / "runs/run_01")
    resumed = train(cfg(*args), tmp_path / "cell")
    assert resumed["metapath"] == "ISI" and resumed["runs"] == 2
    scores = [m for m in summary["metrics"] if not m.endswith("time_s")]  # run_01 was trained again: same scores
    assert {m: resumed["metrics"][m] for m in scores} == {m: summary["metrics"][m] for m in scores}
    assert json.loads((isi / "runs/run_00/results.json").read_text()) == first
    from regnn.pipeline.metapath import select_runs

    # fewer runs than the choice asks for (a quick try of DBLP's GAT-M or Metapath2vec, which choose on 2): on all
    assert select_runs(cfg("dataset=synthetic", "model=gcn_m", "runs=1", "model.metapath_select_runs=2")) == 1
    with pytest.raises(ConfigError, match="metapath_select_runs"):
        train(cfg("dataset=synthetic", "model=gcn_m", "runs=2", "model.metapath_select_runs=-1"), tmp_path / "bad")


def test_baselines_table_renders_paper_numbers_differences_and_the_picked_metapath(tmp_path):
    from regnn.reporting import cells as pool
    from regnn.reporting.baselines import render

    def metrics(micro):
        return {
            k: {"mean": v, "std": 0.5, "n": 2}
            for k, v in {
                "test_micro_f1": micro,
                "test_macro_f1": micro - 1,
                "epoch_time_s": 0.1,
                "train_time_s": 9.0,
            }.items()
        }

    cells = {
        "dblp_gat_m": {
            "dataset": "dblp",
            "model": "gat_m",
            "runs": 2,
            "metrics": metrics(90.15),
            "metapath": "APA",
            "num_parameters": 10,
        },
        "acm_rgcn": {"dataset": "acm", "model": "rgcn", "runs": 2, "metrics": metrics(92.36), "num_parameters": 20},
    }
    for name, r in cells.items():
        (tmp_path / "exp" / name).mkdir(parents=True)
        (tmp_path / "exp" / name / "results.json").write_text(json.dumps(r))
    with pytest.raises(pool.MissingCells, match="dblp_rgcn"):  # by default every cell of the table must exist
        render(tmp_path / "exp", tmp_path / "out", ["dblp", "acm"])
    partial = pool.CellPool(tmp_path / "exp", allow_missing=True)
    render(partial, tmp_path / "out", ["dblp", "acm"])
    missing = partial.missing
    md = (tmp_path / "out" / "table_baselines.md").read_text()
    assert "| DBLP | GAT-M (APA) | 2 |" in md and "91.15" in md and "-1.00" in md  # paper 91.15, diff -1.00
    assert "| ACM | R-GCN | 2 |" in md and "93.36" in md
    assert "dblp_rgcn" in missing and "acm_re_gat" in missing and "Not trained yet" in md and "dblp_rgcn" in md


def test_cells_gone_from_the_pool_render_from_their_archived_summaries(tmp_path):
    from regnn.reporting import cells as pool
    from regnn.reporting.baselines import render

    m = {
        k: {"mean": v, "std": 0.5, "n": 2}
        for k, v in {"test_micro_f1": 91.0, "test_macro_f1": 90.0, "epoch_time_s": 0.1, "train_time_s": 9.0}.items()
    }
    for name in ("dblp_rgcn", "dblp_hgt"):
        (tmp_path / "exp" / name).mkdir(parents=True)
        (tmp_path / "exp" / name / "results.json").write_text(
            json.dumps({"dataset": "dblp", "model": name[5:], "runs": 2, "metrics": m, "num_parameters": 5})
        )
    (tmp_path / "exp" / "dblp_rgcn" / "relation_weights.json").write_text('[{"layers": []}]')
    first = pool.CellPool(tmp_path / "exp", allow_missing=True, archive=tmp_path / "out" / "cells")
    render(first, tmp_path / "out", ["dblp"])
    assert sorted(first.save_archive()) == ["dblp_hgt", "dblp_rgcn"] and first.save_archive() == []  # unchanged
    table = (tmp_path / "out" / "table_baselines.csv").read_text()
    shutil.rmtree(tmp_path / "exp" / "dblp_rgcn")  # the run folders are gone (another machine, a clean clone)
    again = pool.CellPool(tmp_path / "exp", allow_missing=True, archive=tmp_path / "out" / "cells")
    cell = again.load(["dblp_rgcn"])["dblp_rgcn"]
    assert again.archived == ["dblp_rgcn"] and cell["relation_weights"] == [{"layers": []}] and cell["runs"] == 2
    render(again, tmp_path / "out", ["dblp"])
    assert (tmp_path / "out" / "table_baselines.csv").read_text() == table and again.save_archive() == []
    without = pool.CellPool(tmp_path / "exp", allow_missing=True)  # no archive: the cell is missing
    without.load(["dblp_rgcn", "dblp_hgt"])
    assert without.missing == ["dblp_rgcn"]
    # a table still waiting for cells is not rendered, but the trained cells' summaries are kept
    from regnn.reporting.experiments import EXPERIMENTS, render_one

    (tmp_path / "out" / "cells" / "dblp_hgt.json").unlink()
    strict = pool.CellPool(tmp_path / "exp", archive=tmp_path / "out" / "cells")
    line = render_one(next(e for e in EXPERIMENTS if e.renderer == "baselines"), strict, tmp_path / "out2")
    assert "kept" in line and (tmp_path / "out" / "cells" / "dblp_hgt.json").exists()
    assert not (tmp_path / "out2" / "table_baselines.csv").exists()


def test_search_listing_puts_the_best_validation_cell_first(tmp_path, capsys):
    from regnn.reporting.search import main

    for cell, val in (("model.dropout=0.5", 51.0), ("model.dropout=0.8", 53.5)):
        m = {
            k: {"mean": v, "std": 0.0, "n": 2}
            for k, v in {
                "val_micro_f1": val,
                "val_macro_f1": val - 1,
                "test_micro_f1": 50.0,
                "test_macro_f1": 49.0,
                "best_epoch": 10,
            }.items()
        }
        (tmp_path / cell).mkdir()
        (tmp_path / cell / "results.json").write_text(json.dumps({"runs": 2, "metrics": m}))
    assert main([str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[0] == "model.dropout=0.8" and lines[2].split()[0] == "model.dropout=0.5"
    assert main([str(tmp_path / "nothing")]) == 1
    out = tmp_path / "listing" / "search"
    assert main([str(tmp_path), "--out", str(out)]) == 0
    table = pd.read_csv(f"{out}.csv")
    assert list(table["cell"]) == ["model.dropout=0.8", "model.dropout=0.5"] and table["val_micro_f1"][0] == 53.5
    assert "| model.dropout=0.8 | 2 | 53.50 |" in Path(f"{out}.md").read_text()
    before = Path(f"{out}.csv").read_bytes()
    assert main([str(tmp_path), "--out", str(out)]) == 1  # an earlier listing is never written over
    assert "already exists" in capsys.readouterr().out and Path(f"{out}.csv").read_bytes() == before
