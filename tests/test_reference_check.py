"""scripts/regat_reference_check.py: the independent RE-GAT builds the same DBLP graph as regnn and writes its
scores as data, never over an earlier output."""
import json
import subprocess
import sys

import pytest
import torch

from conftest import REPO, real_dataset_dir
from regnn.data import build_relation_graph, builtin_spec, load_magnn

sys.path.insert(0, str(REPO / "scripts"))
import regat_reference_check as check  # noqa: E402


def test_independent_dblp_graph_equals_regnns():
    """Built from the raw files on its own, the check's graph has regnn's edges, self-loops and relation of every
    edge (relation ids in the same order), and the same features, labels and splits."""
    d = real_dataset_dir("DBLP")
    feats, g, rel, num_rel, labels, splits = check.load_dblp(d)
    data = load_magnn(d, builtin_spec("dblp"))
    rg = build_relation_graph(data)
    assert num_rel == rg.num_relations == 10
    u, v = g.edges()
    ru, rv = rg.graph.edges()
    assert sorted(zip(u.tolist(), v.tolist(), rel.tolist())) == sorted(zip(ru.tolist(), rv.tolist(), rg.rel.tolist()))
    for f, t in zip(feats, ["author", "paper", "term", "venue"]):
        assert torch.equal(f, data.features[t].to_dense())
    assert torch.equal(labels, data.labels)
    assert all(torch.equal(splits[s], data.splits[s].sort().values) for s in ("train", "val", "test"))


@pytest.mark.parametrize("mode", ["mul", "none"])
def test_reference_check_writes_scores_and_keeps_earlier_output(mode, tmp_path):
    out = tmp_path / "check.json"
    cmd = [sys.executable, "scripts/regat_reference_check.py", "--seeds", "3", "--max-epochs", "1", "--workers", "1",
           "--mode", mode, "--out", str(out)]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(out.read_text())
    (run,) = res["per_seed"]
    assert run["seed"] == 3 and run["epochs"] == 1 and run["best_epoch"] == 0
    assert 0 < run["test_micro_f1"] <= 100 and res["metrics"]["test_micro_f1"]["mean"] == run["test_micro_f1"]
    assert res["mode"] == mode and res["command"].startswith("python scripts/regat_reference_check.py --seeds 3")
    assert res["model"].startswith("GAT," if mode == "none" else "RE-GAT,")
    before = out.read_bytes()
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and "exists" in p.stderr and out.read_bytes() == before


def test_reference_check_names_missing_data(tmp_path):
    p = subprocess.run([sys.executable, "scripts/regat_reference_check.py", "--data-dir", str(tmp_path / "nowhere"),
                        "--out", str(tmp_path / "x.json")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "make data" in p.stderr and not (tmp_path / "x.json").exists()
