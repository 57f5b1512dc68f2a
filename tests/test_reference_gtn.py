"""scripts/reference/reference_gtn.py (and the reference drivers' shared parts): the torch stand-ins for the two
compiled functions GTN's model imports compute what those functions do, and our graph reaches GTN in its own layout
(edge_index = (col, row) of a source-row adjacency, the identity last, one feature matrix)."""

import importlib.util
import json
import sys
from types import SimpleNamespace

import pytest

import torch

from regnn.data.hetero import HeteroGraph

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts" / "reference"))  # as when the script runs: its folder is on the path
spec = importlib.util.spec_from_file_location("reference_gtn", REPO / "scripts" / "reference" / "reference_gtn.py")
rg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rg)


def test_scatter_add_sums_into_the_indexed_rows():
    src = torch.tensor([1.0, 2.0, 3.0, 4.0])
    index = torch.tensor([2, 0, 2, 1])
    assert rg.scatter_add(src, index, dim=0, dim_size=4).tolist() == [2.0, 4.0, 4.0, 0.0]
    assert rg.scatter_add(src, index).tolist() == [2.0, 4.0, 4.0]


def test_coalesce_sums_duplicates_in_row_major_order_and_passes_gradients():
    index = torch.tensor([[1, 0, 1, 0], [0, 2, 0, 1]])
    value = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    idx, val = rg.coalesce(index, value, 2, 3)
    assert idx.tolist() == [[0, 0, 1], [1, 2, 0]]
    assert val.tolist() == [4.0, 2.0, 4.0]
    (val * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert value.grad.tolist() == [100.0, 10.0, 100.0, 1.0]


def test_our_graph_in_gtns_layout():
    g = HeteroGraph(
        {
            ("a", "a->m", "m"): (torch.tensor([0, 1]), torch.tensor([2, 0])),
            ("m", "m->a", "a"): (torch.tensor([2, 0]), torch.tensor([0, 1])),
        },
        {"a": 2, "m": 3},
    )
    ds = SimpleNamespace(graph=g, target="m", features={"a": torch.zeros(2, 1), "m": torch.eye(3)})
    adjs, x, off, n = rg.gtn_inputs(ds)
    assert (n, off) == (5, 2) and len(adjs) == 3
    # a->m: 0 -> 2 and 1 -> 0 in type-local numbering; global m = 2 + local; edge_index rows are (dst, src)
    assert adjs[0][0].tolist() == [[4, 2], [0, 1]]
    assert adjs[-1][0].tolist() == [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]
    assert x.shape == (5, 3) and x[:2].abs().sum() == 0 and torch.equal(x[2:], torch.eye(3))


def test_featured_types_of_other_widths_are_refused():
    g = HeteroGraph({("a", "a->m", "m"): (torch.tensor([0]), torch.tensor([0]))}, {"a": 1, "m": 1})
    ds = SimpleNamespace(graph=g, target="m", features={"a": torch.ones(1, 2), "m": torch.ones(1, 3)})
    try:
        rg.gtn_inputs(ds)
    except ValueError as e:
        assert "one feature matrix" in str(e)
    else:
        raise AssertionError("mixed feature widths were accepted")


def test_a_driver_refuses_a_wrong_checkout_and_an_existing_output(tmp_path):
    import reference_runs as rr

    a = rr.parser("x/y").parse_args(["--repo", str(tmp_path), "--out", str(tmp_path / "out.json")])
    with pytest.raises(SystemExit, match="not a checkout of x/y"):
        rr.check(a, "x/y", "model.py")
    (tmp_path / "model.py").write_text("")
    rr.check(a, "x/y", "model.py")
    (tmp_path / "out.json").write_text("{}")
    with pytest.raises(SystemExit, match="exists"):
        rr.check(a, "x/y", "model.py")


def test_the_summary_is_the_runs_mean_and_std(tmp_path):
    import reference_runs as rr

    a = rr.parser("x/y").parse_args(["--repo", "r", "--out", str(tmp_path / "s.json")])
    rr.summarise(a, [{"test_micro": 50.0, "test_macro": 40.0}, {"test_micro": 54.0, "test_macro": 44.0}])
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["test_micro"] == [52.0, 2.0] and s["test_macro"] == [42.0, 2.0] and len(s["runs"]) == 2
