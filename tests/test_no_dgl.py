"""regnn needs no DGL: with `import dgl` failing, regnn.core and regnn.models import, an RE-GNN (GCN and GAT
backbones), R-GCN and HGT train a step on a graph built from arrays, and train.py trains RE-GCN, RE-GAT, every
baseline of Table 2 and the mini-batch trainer."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO
from regnn.catalog import TABLE2_MODELS

SCRIPT = textwrap.dedent("""
    import importlib.abc
    import sys

    class NoDGL(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "dgl" or name.startswith("dgl."):
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, NoDGL())
    from types import SimpleNamespace

    import torch

    import regnn.core
    import regnn.models
    from regnn.core.adjacency import Adjacency
    from regnn.core.backend import TORCH, choose_backend
    from regnn.core.relation import Relation
    from regnn.models import ARCHS, REGNN, RelationInputs

    assert "dgl" not in sys.modules
    for arch in ARCHS:  # every model's module, baselines included (imported on first use)
        ARCHS[arch].prepare

    # two node types (4 of type a, 3 of type b), relations a->b (0), b->a (1), then one self-loop per type (2, 3)
    src = torch.tensor([0, 1, 2, 3, 4, 5, 6, 4] + list(range(7)))
    dst = torch.tensor([4, 5, 6, 4, 0, 1, 2, 3] + list(range(7)))
    rel = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1] + [2] * 4 + [3] * 3)
    names = ["ab", "ba", "self:a", "self:b"]
    types = SimpleNamespace(relation_names=names, num_edge_relations=2)
    feats = {"a": torch.randn(4, 5), "b": torch.randn(3, 2)}
    backends = [TORCH] + [b for b in [choose_backend("cpu")] if b.kernels is not None]
    for backend in backends:
        adj = Adjacency.from_edges(src, dst, rel, 7, backend=backend)
        inputs = RelationInputs(adj, ["a", "b"], torch.arange(4), None)
        for backbone, extra in (("gcn", {}), ("gat", {"heads": 2, "attn_dropout": 0.0, "activation": "elu"})):
            torch.manual_seed(0)
            m = REGNN(in_dims={"a": 5, "b": 2}, num_classes=3, relation_types=types,
                      relation=Relation(scale=100.0, negative_slope=0.01, edge_embeddings=True,
                                        self_loop_embeddings=True),
                      backbone=backbone, hidden=8, num_layers=3, dropout=0.0, **extra)
            logits, _ = m(inputs, feats)
            assert logits.shape == (4, 3) and torch.isfinite(logits).all()
            logits.logsumexp(1).sum().backward()
            grads = [p.grad for rw in m.relations for p in rw.parameters()]
            assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)
            assert sum(g.abs().sum() for g in grads) > 0
            print(backend.name, backbone, "ok")

    # R-GCN and HGT (typed layers on arrays) from the same graph as a heterograph: a training step
    from types import SimpleNamespace
    from regnn.data.hetero import HeteroGraph
    hg = HeteroGraph({("a", "ab", "b"): (src[:4], dst[:4] - 4), ("b", "ba", "a"): (src[4:8] - 4, dst[4:8])},
                     {"a": 4, "b": 3})
    for arch, extra in (("rgcn", {"num_bases": None}), ("hgt", {"heads": 2, "use_norm": False, "variant": "dgl"})):
        inputs = ARCHS[arch].prepare(SimpleNamespace(graph=hg, target="a"))
        torch.manual_seed(0)
        m = ARCHS[arch].build(inputs, {"a": 5, "b": 2}, 3, hidden=8, num_layers=2, dropout=0.5, **extra)
        logits, _ = m(inputs, feats)
        assert logits.shape == (4, 3) and torch.isfinite(logits).all()
        logits.logsumexp(1).sum().backward()
        assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in m.parameters())
        print(arch, "ok")
    assert "dgl" not in sys.modules
""")


def test_core_and_models_run_without_dgl():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "torch gcn ok" in r.stdout and "torch gat ok" in r.stdout
    assert "rgcn ok" in r.stdout and "hgt ok" in r.stdout


def test_the_blocker_does_block_dgl():
    """The finder of the script above makes `import dgl` fail (else the test would prove nothing)."""
    blocker = SCRIPT.split("import torch", 1)[0]
    r = subprocess.run([sys.executable, "-c", blocker + "\nimport dgl\n"], capture_output=True, text=True, timeout=120)
    if r.returncode == 0:
        pytest.fail("import dgl succeeded with the blocker installed")
    assert "blocked in this test" in r.stderr


TABLE2 = list(TABLE2_MODELS)


@pytest.mark.onepython
def test_train_py_trains_every_table2_model_and_minibatch_with_dgl_blocked(tmp_path):
    """A package named dgl that fails on import shadows any installed DGL for the whole process tree."""
    block = tmp_path / "block" / "dgl"
    block.mkdir(parents=True)
    (block / "__init__.py").write_text("raise ImportError('dgl is blocked in this test')\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(block.parent), os.environ.get("PYTHONPATH", "")]),
        "HYDRA_FULL_ERROR": "0",
    }
    check = subprocess.run([sys.executable, "-c", "import dgl"], env=env, capture_output=True, text=True)
    assert check.returncode != 0 and "blocked in this test" in check.stderr
    fast = ["dataset=synthetic", "runs=1", "threads=1", "trainer.max_epochs=2", "trainer.patience=2"]
    p = subprocess.run(
        [
            sys.executable,
            str(REPO / "train.py"),
            "-m",
            f"model={','.join(TABLE2)}",
            *fast,
            f"hydra.sweep.dir={tmp_path}/sweep",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    trained = {json.loads(f.read_text())["model"] for f in (tmp_path / "sweep").glob("*/results.json")}
    assert trained == set(TABLE2), sorted(set(TABLE2) - trained)
    p = subprocess.run(
        [
            sys.executable,
            str(REPO / "train.py"),
            "trainer=minibatch",
            "model=re_gcn",
            *fast,
            f"hydra.run.dir={tmp_path}/mb",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads((tmp_path / "mb" / "results.json").read_text())["trainer"] == "minibatch"
