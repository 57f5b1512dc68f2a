"""scripts/checks/compose_cells.py: a sweep's cells are the product of its params, and a cell whose stored config
computes something else is named, while one that differs only in where the tree lies is not."""

import importlib.util

import yaml
from omegaconf import OmegaConf

import regnn.config  # noqa: F401  (the model schemas and resolvers the configs compose with)

from conftest import REPO, cfg

spec = importlib.util.spec_from_file_location("compose_cells", REPO / "scripts" / "checks" / "compose_cells.py")
cc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cc)


def _cell(*overrides):
    return {"experiments": ["test"], "config": OmegaConf.to_container(cfg(*overrides), resolve=True)}


def test_a_sweep_is_the_product_of_its_params():
    cells = cc._sweep({"dataset": "dblp,acm", "model": "gcn,re_gcn,gat", "runs": 10})
    assert len(cells) == 6 and ["dataset=acm", "model=re_gcn", "runs=10"] in cells


def test_the_tree_location_is_spelt_repo():
    assert cc._relative({"a": ["/x/y/data", "/z"], "b": "/x/y"}, "/x/y") == {"a": ["<repo>/data", "/z"], "b": "<repo>"}


def test_a_cell_computing_otherwise_is_named_and_a_moved_tree_is_not(tmp_path):
    new = {"dblp_re_gcn": _cell("dataset=dblp", "model=re_gcn")}
    moved = _cell("dataset=dblp", "model=re_gcn")
    moved["config"]["dataset"]["dir"] = "/elsewhere/DBLP"
    assert cc.against_problems(new, {"dblp_re_gcn": moved}) == []
    other = _cell("dataset=dblp", "model=re_gcn", "optimizer.lr=0.5")
    assert cc.against_problems(new, {"dblp_re_gcn": other}) == ["dblp_re_gcn: computes differently in ['optimizer']"]
    assert cc.against_problems(new, {}) == ["dblp_re_gcn: only in the new tree"]
    for name, c in (("dblp_re_gcn", other), ("acm_gcn", moved)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.yaml").write_text(yaml.safe_dump(c["config"]))
    assert cc.stored_problems(new, tmp_path) == [
        "acm_gcn: stored in {} but no experiment composes it".format(tmp_path),
        "dblp_re_gcn: its stored config computes differently in ['optimizer']",
    ]
