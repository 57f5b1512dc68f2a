"""One training path on every device: the checks a GPU run needs, parametrised over devices.

Every test runs on the CPU in the fast suite, and on CUDA where torch sees it (those variants are marked `gpu`:
`pytest -m gpu`; scripts/bench/gpu_check.sh runs them on a lent GPU). On the CPU the model side is built as a GPU gets
it: the graph's arrays (an `Adjacency`: torch's edge-wise ops) and the pure-torch aggregation (REGNN_KERNELS=0;
the fused kernels are CPU code).
"""

import pytest
import torch
import torch.nn.functional as F

from conftest import cfg as _cfg, relation, fullbatch, minibatch
from regnn.core.adjacency import Adjacency
from regnn.core.attention_ops import aggregate_heads
from regnn.data import build_relation_graph, load_dataset
from regnn.pipeline import train
from regnn.errors import ConfigError
from regnn.models import REGNN, RelationInputs
from regnn.pipeline.from_config import device_of
from regnn.training.device import select_device
from regnn.training.minibatch import train_minibatch_run
from regnn.models.sampled import NodeInputs, SampledREGNN
from regnn.training.sampling import SampledGraph, sampled_loader
from regnn.training.seed import seed_everything
from regnn.training.trainer import make_optimizer, train_run

CUDA = pytest.param(
    "cuda",
    marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")],
)
DEVICES = ["cpu", CUDA]


@pytest.fixture
def torch_backend(monkeypatch):
    """The pure-torch aggregation on the CPU too: the code a GPU runs."""
    monkeypatch.setenv("REGNN_KERNELS", "0")


@pytest.fixture(scope="module")
def synthetic():
    return load_dataset(
        "synthetic",
        format="synthetic",
        num_items=300,
        num_sources=150,
        num_tags=20,
        trusted_degree=2,
        random_degree=12,
        seed=0,
    )


# -- the aggregation against a dense float64 reference, on the device ----------------------------------------------
def _random_graph(n, e, num_rel, seed=0):
    g = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=g), torch.randint(0, n, (e,), generator=g)
    rel = torch.randint(0, num_rel, (e,), generator=g)
    return Adjacency.from_edges(src, dst, rel, n), rel  # edges in random order: the Adjacency permutes them


def _dense(n, adj, w, h, norm):
    a = torch.zeros(n, n, dtype=h.dtype, device=h.device).index_put((adj.dst_of, adj.indices), w, accumulate=True)
    d = a.sum(1).clamp(min=1)
    if norm == "both":
        return d.pow(-0.5)[:, None] * (a @ (d.pow(-0.5)[:, None] * h))
    return (a @ h) / d[:, None] if norm == "right" else a @ h


def _rel_err(got, want):
    return float((got - want).abs().max() / want.abs().max().clamp(min=1e-30))


@pytest.mark.parametrize("device", DEVICES)
def test_aggregation_and_gradients_match_a_dense_reference(device, torch_backend):
    n, e, r = 120, 900, 4
    adj, rel = _random_graph(n, e, r, seed=1)
    adj = adj.to(device)
    assert all(t.device.type == device for t in (adj.indptr, adj.indices, adj.rel))
    for dim in (5, 16):  # both SDDMM paths of the relation-weight gradient
        for norm in ("both", "right", "none"):
            h = torch.randn(n, dim, dtype=torch.float64, device=device, requires_grad=True)
            alpha = (torch.rand(r, 1, dtype=torch.float64, device=device) * 2 + 0.1).requires_grad_()
            grad_out = torch.randn(n, dim, dtype=torch.float64, device=device)
            got = adj.normalized_spmm(h, alpha, norm)
            (got * grad_out).sum().backward()
            gh, ga = h.grad.clone(), alpha.grad.clone()
            h.grad = alpha.grad = None
            want = _dense(n, adj, alpha[adj.rel, 0], h, norm)
            (want * grad_out).sum().backward()
            err = max(_rel_err(got, want), _rel_err(gh, h.grad), _rel_err(ga, alpha.grad))
            assert err < 1e-10, f"normalized_spmm norm={norm} width {dim}: relative error {err:.1e}"
    # the attention layers' aggregation: per-edge, per-head weights
    z = torch.randn(n, 3, 8, dtype=torch.float64, device=device, requires_grad=True)
    att = torch.rand(e, 3, dtype=torch.float64, device=device, requires_grad=True)
    grad_out = torch.randn(n, 3, 8, dtype=torch.float64, device=device)
    got = aggregate_heads(adj, z, att)
    (got * grad_out).sum().backward()
    gz, gatt = z.grad.clone(), att.grad.clone()
    z.grad = att.grad = None
    want = torch.stack([_dense(n, adj, att[:, k], z[:, k], "none") for k in range(3)], 1)
    (want * grad_out).sum().backward()
    assert max(_rel_err(got, want), _rel_err(gz, z.grad), _rel_err(gatt, att.grad)) < 1e-10


# -- full batch: the graph from arrays on the device trains as the DGL graph does on the CPU ------------------------
MODELS = {
    "re_gcn": dict(backbone="gcn", hidden=16, num_layers=2, norm="both"),
    "re_gat": dict(backbone="gat", hidden=8, heads=2, num_layers=2, attn_dropout=0.0),
    "re_gatv2": dict(backbone="gatv2", hidden=8, heads=2, num_layers=2, attn_dropout=0.0),
    # the released GIN, GraphSAGE and MixHop layers (tests/test_released_backbones.py pins them to the authors')
    "re_gin": dict(backbone="gin", hidden=16, num_layers=3, mlp_dropout=0.0),
    "re_sage": dict(backbone="sage", hidden=16, num_layers=3, double_dropout=True),
    "re_mixhop": dict(backbone="mixhop", hidden=8, num_layers=2, powers=[0, 1, 2]),
}


def _relation_inputs(data, device):
    """RE-GNN's inputs as a GPU gets them: the relation graph built on the CPU, its arrays on `device`."""
    rg = build_relation_graph(data)
    return RelationInputs(rg.adjacency().to(device), rg.ntypes, rg.nodes_of(data.target).to(device), rg)


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("device", DEVICES)
def test_float64_steps_on_the_device_match_the_cpu(device, model, synthetic, monkeypatch):
    """The same initial weights, 4 Adam steps in float64 without dropout: on the CPU as the pipeline builds the
    graph, with the default backend, and on `device` with the graph's arrays moved there and the torch backend."""
    data = synthetic
    kwargs = dict(MODELS[model], dropout=0.0, relation=relation())
    reference = RelationInputs.build(data)  # the CPU pipeline's own inputs
    torch.manual_seed(0)
    init = REGNN.from_inputs(reference, data.in_dims, data.num_classes, **kwargs).double().state_dict()

    def steps(inputs, dev):
        net = REGNN.from_inputs(inputs, data.in_dims, data.num_classes, **kwargs).double()
        net.load_state_dict(init)
        net = net.to(dev)
        feats = {t: x.double().to(dev) for t, x in data.features.items()}
        train, y = data.splits["train"].to(dev), data.labels.to(dev)
        opt = make_optimizer(net.parameters(), lr=0.01, weight_decay=5e-4)
        losses = []
        for _ in range(4):
            logits, _ = net(inputs, feats)
            loss = F.cross_entropy(logits[train], y[train])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, {k: v.detach().cpu() for k, v in net.state_dict().items()}

    want_losses, want = steps(reference, "cpu")
    monkeypatch.setenv("REGNN_KERNELS", "0")
    got_losses, got = steps(_relation_inputs(data, device), device)
    assert want_losses[-1] < want_losses[0]  # it learns
    assert got_losses == pytest.approx(want_losses, rel=1e-10)
    worst = max(_rel_err(got[k], want[k]) for k in want if want[k].is_floating_point() and want[k].numel())
    assert worst < 1e-9, f"parameters after 4 steps differ by {worst:.1e} (relative)"


@pytest.mark.parametrize("device", DEVICES)
def test_configured_trainer_runs_on_the_device(device, synthetic, torch_backend):
    """train_run, float32 and deterministic as the pipeline runs it: scores, history and weights on `device`."""
    seed_everything(0)
    inputs = _relation_inputs(synthetic, device)
    net = REGNN.from_inputs(
        inputs, synthetic.in_dims, synthetic.num_classes, **MODELS["re_gat"], dropout=0.5, relation=relation()
    ).to(device)
    r = train_run(
        net,
        inputs,
        {t: x.to(device) for t, x in synthetic.features.items()},
        synthetic.labels.to(device),
        {s: i.to(device) for s, i in synthetic.splits.items()},
        seed=0,
        options=fullbatch(optimizer={"name": "adam", "lr": 0.01}, max_epochs=15, patience=15),
    )
    assert r.epochs == 15 and r.history[-1]["train_loss"] < r.history[0]["train_loss"]
    assert 0 < r.metrics["test_micro_f1"] <= 100 and r.embeddings.device.type == "cpu"
    assert all(p.device.type == device for p in net.parameters())


# -- mini-batch: blocks sampled on the CPU, their arrays on the device -----------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_sampled_blocks_move_as_arrays(device, synthetic):
    sg = SampledGraph(synthetic)
    blocks = next(iter(sampled_loader(sg, sg.seeds(synthetic.splits["train"][:32]), [4, 3], 32, False))).blocks
    for b in blocks:
        assert b.src_nodes.device.type == "cpu"
        adj, cpu = sg.adjacency(b, device), sg.adjacency(b)
        assert (adj.num_dst, adj.num_src) == (b.num_dst, b.num_src)
        for name in ("indptr", "indices", "t_indptr", "t_indices", "t_pos", "dst_of", "rel"):
            assert getattr(adj, name).device.type == device and torch.equal(
                getattr(adj, name).cpu(), getattr(cpu, name)
            ), name
        # the block's sampled edges plus one typed self-loop per destination, nothing else
        loops = cpu.rel >= sg.num_edge_relations
        u, v = b.edge_src, b.edge_dst
        assert sorted(zip(cpu.indices[~loops].tolist(), cpu.dst_of[~loops].tolist())) == sorted(
            zip(u.tolist(), v.tolist())
        )
        assert torch.equal(cpu.dst_of[loops], torch.arange(b.num_dst))
        assert torch.equal(cpu.indices[loops], cpu.dst_of[loops])


@pytest.mark.parametrize("device", DEVICES)
def test_minibatch_training_runs_on_the_device(device, synthetic, torch_backend):
    sg = SampledGraph(synthetic)
    seed_everything(0)
    inputs = NodeInputs(synthetic.features, embed_dim=16)
    regnn = REGNN(
        in_dims=inputs.in_dims,
        num_classes=synthetic.num_classes,
        relation_types=sg,
        backbone="gcn",
        hidden=16,
        num_layers=2,
        dropout=0.2,
        relation=relation(),
        norm="right",
        layout="stack",
    )
    model = SampledREGNN(regnn, inputs, sg.ntypes, sg.offsets, sg.node_type).to(device)
    r = train_minibatch_run(
        model,
        sg,
        synthetic.labels,
        synthetic.splits,
        seed=0,
        num_classes=synthetic.num_classes,
        options=minibatch(
            optimizer={"name": "adam", "lr": 0.01},
            fanouts=[5, 5],
            batch_size=64,
            max_epochs=3,
            patience=3,
            eval="layerwise",
            log_every=0,
        ),
        device=device,
    )
    assert r.epochs == 3 and all(p.device.type == device for p in model.parameters())
    assert 0 < r.metrics["test_acc"] <= 100 and r.history[-1]["train_loss"] < r.history[0]["train_loss"]


# -- every model on a GPU: all of them run on arrays -----------------------------------------------------------------
@pytest.fixture
def cuda_seen(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "a test GPU")


def test_every_model_uses_the_gpu_torch_sees(cuda_seen):
    for requested in ("auto", "cuda", "cuda:0"):
        dev, why = select_device(requested)
        assert dev.type == "cuda" and "a test GPU" in why


def test_cuda_without_a_gpu_is_one_line(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"^device=cuda requested but torch sees no CUDA device; use device=cpu"):
        select_device("cuda")
    with pytest.raises(ConfigError, match=r"^device=cuda requested but torch sees no CUDA device; use device=cpu"):
        device_of("cuda")  # as the job asks: the user's one-line error
    assert select_device("auto")[0].type == "cpu"


@pytest.mark.parametrize(
    "model", ["re_gcn", "simple_hgn", "gcn_m", "rgcn", "hgt", "han", "rhgnn", "magnn_ac", "metapath2vec", "gtn"]
)
@pytest.mark.parametrize("device", DEVICES)
def test_pipeline_trains_on_the_device(tmp_path, device, model, torch_backend, set_threads):
    """The pipeline's full-batch path, as `train.py device=...` runs it: the device is in results.json."""
    set_threads(torch.get_num_threads())  # restored after the test: the pipeline sets its own
    extra = {
        "gcn_m": ["model.metapath=ISI"],
        "metapath2vec": ["model.metapath=ISI", "model.walk_length=8", "model.walks_per_node=1", "model.hidden=8"],
        "simple_hgn": ["model.hidden=16", "model.heads=2", "model.edge_dim=8", "model.num_layers=1"],
    }
    summary = train(
        _cfg(
            "dataset=synthetic",
            f"model={model}",
            f"device={device}",
            "runs=1",
            "trainer.max_epochs=3",
            "logger=none",
            *extra.get(model, []),
        ),
        tmp_path,
    )
    assert summary["environment"]["device"].startswith(device) and summary["finished_runs"] == 1
