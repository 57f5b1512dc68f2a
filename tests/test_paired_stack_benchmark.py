"""scripts/bench/paired_stack_benchmark.py: what it reads of a run folder and the ratios it reports."""

import importlib.util
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPT = REPO / "scripts" / "bench" / "paired_stack_benchmark.py"
spec = importlib.util.spec_from_file_location("paired_stack_benchmark", SCRIPT)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def write_run(root, key, train_s, batches=60, sample=0.1):
    d = root / key / "runs" / "run_00"
    d.mkdir(parents=True)
    (d / "history.csv").write_text(f"epoch,batches,train_time_s,profile_sample_s\n0,{batches},{train_s},{sample}\n")


def test_ratios_are_taken_round_by_round(tmp_path):
    # the machine is twice as slow in round 2: both sides slow down, the ratio stays
    for i, (this, other) in enumerate([(60.0, 80.0), (120.0, 160.0), (66.0, 80.0)], 1):
        write_run(tmp_path, f"this_re_gcn_{i}", this)
        write_run(tmp_path, f"other_re_gcn_{i}", other)
    runs = {p.name: bench.read_run(p) for p in tmp_path.iterdir()}
    [row] = bench.summarise(runs, rounds=3)
    assert row["model"] == "re_gcn" and row["rounds"] == 3
    assert row["ratios"] == pytest.approx([0.75, 0.75, 0.825])
    assert row["median_ratio"] == pytest.approx(0.75)
    assert row["this_s_per_batch"] == pytest.approx([1.0, 2.0, 1.1])


def test_a_round_missing_one_side_is_left_out(tmp_path):
    write_run(tmp_path, "this_re_gat_1", 60.0)
    write_run(tmp_path, "other_re_gat_1", 60.0)
    write_run(tmp_path, "this_re_gat_2", 60.0)  # its other side never finished
    write_run(tmp_path, "this_re_gat_3", 30.0)
    write_run(tmp_path, "other_re_gat_3", 60.0)
    runs = {p.name: bench.read_run(p) for p in tmp_path.iterdir()}
    [row] = bench.summarise(runs, rounds=3)
    assert row["rounds"] == 2 and row["ratios"] == [1.0, 0.5] and row["this_s_per_batch"] == [1.0, 0.5]
    assert bench.read_run(tmp_path / "absent") is None


def test_it_refuses_to_overwrite_and_to_take_a_folder_without_train_py(tmp_path):
    out = tmp_path / "res"
    out.with_suffix(".md").write_text("earlier\n")
    args = [
        sys.executable,
        str(SCRIPT),
        "--other-checkout",
        str(tmp_path),
        "--other-python",
        sys.executable,
        "--other-data",
        str(tmp_path),
        "--collect",
        "--work",
        str(tmp_path / "w"),
    ]
    p = subprocess.run([*args, "--out", str(out)], capture_output=True, text=True)
    assert p.returncode != 0 and "exists" in p.stderr and out.with_suffix(".md").read_text() == "earlier\n"
    p = subprocess.run([*args, "--out", str(tmp_path / "new")], capture_output=True, text=True)
    assert p.returncode != 0 and "no train.py" in p.stderr
