"""The compute core and the models need torch only: with `import dgl` failing, regnn.core and regnn.models import,
an RE-GNN (GCN and GAT backbones) trains a step on a graph built from arrays, on both backends, and so do the
R-GCN and HGT baselines."""
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    import importlib.abc
    import sys

    class NoDGL(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "dgl" or name.startswith("dgl."):
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, NoDGL())
    import torch

    import regnn.core
    import regnn.models
    from regnn.core.adjacency import Adjacency
    from regnn.core.backend import TORCH, choose_backend
    from regnn.models import ARCHS, REGNN, RelationInputs

    assert "dgl" not in sys.modules

    # two node types (4 of type a, 3 of type b), relations a->b (0), b->a (1), then one self-loop per type (2, 3)
    src = torch.tensor([0, 1, 2, 3, 4, 5, 6, 4] + list(range(7)))
    dst = torch.tensor([4, 5, 6, 4, 0, 1, 2, 3] + list(range(7)))
    rel = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1] + [2] * 4 + [3] * 3)
    names = ["ab", "ba", "self:a", "self:b"]
    feats = {"a": torch.randn(4, 5), "b": torch.randn(3, 2)}
    backends = [TORCH] + [b for b in [choose_backend("cpu")] if b.kernels is not None]
    for backend in backends:
        adj = Adjacency.from_edges(src, dst, rel, 7, backend=backend)
        inputs = RelationInputs(adj, ["a", "b"], torch.arange(4), None)
        for backbone, extra in (("gcn", {}), ("gat", {"heads": 2, "attn_dropout": 0.0, "activation": "elu"})):
            torch.manual_seed(0)
            m = REGNN(in_dims={"a": 5, "b": 2}, num_classes=3, relation_names=names, num_edge_relations=2,
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
    for arch, extra in (("rgcn", {}), ("hgt", {"heads": 2})):
        inputs = ARCHS[arch].prepare(SimpleNamespace(graph=hg, target="a"))
        torch.manual_seed(0)
        m = ARCHS[arch].build(inputs, {"a": 5, "b": 2}, 3, hidden=8, **extra)
        logits, _ = m(inputs, feats)
        assert logits.shape == (4, 3) and torch.isfinite(logits).all()
        logits.logsumexp(1).sum().backward()
        assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in m.parameters())
        print(arch, "ok")
    assert "dgl" not in sys.modules
''')


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
