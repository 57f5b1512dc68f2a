"""Outputs named after the graph, and `python -m regnn.runs list|best` over them."""

import json
import subprocess
import sys

import pytest

from conftest import REPO, run_train
from custom_data import write_npz


def _cell(folder, graph, model, val, test, finished, runs=3, std=0.5):
    folder.mkdir(parents=True)
    metrics = {"val_micro_f1": {"mean": val, "std": std}, "test_micro_f1": {"mean": test, "std": 0.4}}
    summary = {"dataset": "custom", "model": model, "runs": runs, "per_run": [], "metrics": metrics}
    summary["finished_at"] = finished
    (folder / "results.json").write_text(json.dumps(summary))
    (folder / "data.json").write_text(json.dumps({"dataset": "custom", "graph": graph}))


def runs_cli(*args):
    return subprocess.run([sys.executable, "-m", "regnn.runs", *args], capture_output=True, text=True, cwd=REPO)


def test_best_is_chosen_on_validation_per_graph_and_list_reads_every_cell(tmp_path):
    _cell(tmp_path / "runs/shops/mlp/t1", "shops", "mlp", val=80.0, test=95.0, finished="2026-01-01T10:00:00")
    _cell(tmp_path / "runs/shops/re_gcn/t2", "shops", "re_gcn", val=90.0, test=85.0, finished="2026-01-02T10:00:00")
    _cell(tmp_path / "runs/films/re_gat/t3", "films", "re_gat", val=60.0, test=61.0, finished="2026-01-03T10:00:00")
    (tmp_path / "runs/films/gcn/t4").mkdir(parents=True)
    (tmp_path / "runs/films/gcn/t4/results.json").write_text("{not json")  # skipped, counted, left as it is
    p = runs_cli("best", "--root", str(tmp_path), "--json")
    assert p.returncode == 0, p.stderr
    rows = {r["graph"]: r for r in json.loads(p.stdout)}
    assert rows["shops"]["model"] == "re_gcn"  # the better validation, though MLP's test is higher
    assert rows["films"]["model"] == "re_gat"
    assert "1 results.json" in p.stderr and (tmp_path / "runs/films/gcn/t4/results.json").read_text() == "{not json"
    p = runs_cli("list", "--root", str(tmp_path), "--graph", "shops")
    lines = p.stdout.splitlines()
    assert p.returncode == 0 and len(lines) == 3 and lines[1].split()[:2] == ["shops", "mlp"]
    assert "runs/shops/re_gcn/t2" in lines[2]
    assert runs_cli("best", "--root", str(tmp_path / "nowhere")).returncode == 2


def test_best_trusts_a_cell_of_many_runs_over_a_lucky_one_of_few_and_prints_the_runs(tmp_path):
    day = "2026-01-0{}T10:00:00"
    _cell(tmp_path / "a", "shops", "gcn", val=91.0, test=90.0, finished=day.format(1), runs=1, std=0.0)  # one run
    _cell(tmp_path / "b", "shops", "gat", val=92.0, test=90.0, finished=day.format(2), runs=2, std=4.0)  # two, wide
    _cell(tmp_path / "c", "shops", "re_gcn", val=90.5, test=89.0, finished=day.format(3), runs=10, std=0.5)
    p = runs_cli("best", "--root", str(tmp_path))
    assert p.returncode == 0, p.stderr
    line = p.stdout.splitlines()[1].split()
    assert line[:2] == ["shops", "re_gcn"] and "10" in line  # the surest mean, with its runs printed
    _cell(tmp_path / "d", "films", "gcn", val=70.0, test=70.0, finished=day.format(4), runs=1, std=0.0)
    _cell(tmp_path / "e", "films", "gat", val=71.0, test=60.0, finished=day.format(5), runs=1, std=0.0)
    rows = {r["graph"]: r for r in json.loads(runs_cli("best", "--root", str(tmp_path), "--json").stdout)}
    assert rows["films"]["model"] == "gat"  # single runs only: the higher mean


@pytest.mark.onepython
def test_two_custom_graphs_land_in_folders_named_after_them(tmp_path):
    a = write_npz(tmp_path / "shops_v1")  # no name: the folder's
    b = write_npz(tmp_path / "other", meta_overrides={"name": "films"})
    out = tmp_path / "outputs"
    for path in (a, b):
        common = ["dataset=custom", f"dataset.path={path}", "model=mlp", "runs=1", "trainer.max_epochs=2"]
        p = run_train(*common, "trainer.patience=2", f"paths.output_dir={out}")
        assert p.returncode == 0, p.stderr
    assert sorted(d.name for d in (out / "runs").iterdir()) == ["films", "shops_v1"]
    assert [d.name for d in (out / "runs" / "films").iterdir()] == ["mlp"]
    p = runs_cli("best", "--root", str(out), "--graph", "films", "--json")
    assert p.returncode == 0 and [r["graph"] for r in json.loads(p.stdout)] == ["films"]
