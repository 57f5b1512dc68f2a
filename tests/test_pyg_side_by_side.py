"""regnn's R-GCN layer computes what PyG's RGCNConv computes (scripts/bench/pyg_side_by_side.py, whose committed
table compares the two trained on DBLP, ACM and IMDB): the same scores from the same weights, before and after
training with the same trainer."""

import importlib.util
import sys

import pytest
import torch

from conftest import REPO

pytest.importorskip("torch_geometric")


def _script():
    path = REPO / "scripts" / "bench" / "pyg_side_by_side.py"
    spec = importlib.util.spec_from_file_location("pyg_side_by_side", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["pyg_side_by_side"] = module
    spec.loader.exec_module(module)
    return module


def test_regnn_rgcn_and_pyg_rgcnconv_are_one_function_and_train_alike():
    from omegaconf import OmegaConf, open_dict

    from regnn.pipeline.api import compose
    from regnn.pipeline.fullbatch import DeviceGraph
    from regnn.spec import training_of
    from regnn.training.seed import seed_everything

    side = _script()
    cfg = compose(["dataset=synthetic", "model=rgcn", "trainer.max_epochs=15", "trainer.patience=15"])
    with open_dict(cfg):
        del cfg["hydra"]
    OmegaConf.resolve(cfg)
    g = DeviceGraph(cfg, torch.device("cpu"))
    ours = g.build(0)
    theirs = side.PygRGCN(ours)
    assert side.same_scores(ours, theirs, g) < 1e-6
    broken = side.PygRGCN(ours)
    with torch.no_grad():
        broken.convs[0].weight[0] += 0.1  # one relation's weight changed: another function, told apart
    assert side.same_scores(ours, broken, g) > 1e-3
    results = []
    for model in (ours, theirs):
        seed_everything(0, cfg.deterministic)
        results.append(g.trainer()(model, g.inputs, g.feats, g.labels, g.splits, seed=0, options=training_of(cfg)))
    a, b = ([h["val_loss"] for h in r.history] for r in results)
    assert len(a) == len(b) == 15 and max(abs(x - y) for x, y in zip(a, b)) < 1e-4
