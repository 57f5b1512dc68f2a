"""The benchmarks and checks say how a new figure compares with the previous committed one, so a slower change or a
lost accuracy shows itself where it is run (regnn.reporting.benchmark, scripts/bench/scale_benchmark.py,
scripts/checks/scale_accuracy_check.py)."""

import importlib.util
import json
import sys

import pytest

from conftest import REPO


def _module(name: str, folder: str = "bench"):
    path = REPO / "scripts" / folder / f"{name}.py"
    sys.path.insert(0, str(path.parent))  # as when the script runs: its folder is on the path
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(path.parent))


def _row(model, seconds):
    return {
        "dataset": "dblp",
        "model": model,
        "median_epoch_s": seconds,
        "peak_rss_mb": 900.0,
        "num_parameters": 1000,
        "threads": 2,
    }


def test_the_benchmark_report_gives_each_cell_its_ratio_to_the_previous_figure(tmp_path, capsys):
    from regnn.reporting import benchmark as report

    report.write([_row("gcn", 0.050), _row("re_gcn", 0.060)], None, tmp_path)
    first = json.loads((tmp_path / "benchmark.json").read_text())["cells"]
    assert all(c["ratio_to_previous"] is None for c in first)  # nothing to compare with yet
    report.write([_row("gcn", 0.050), _row("re_gcn", 0.090), _row("gat", 1.0)], None, tmp_path)
    cells = {c["model"]: c for c in json.loads((tmp_path / "benchmark.json").read_text())["cells"]}
    assert cells["re_gcn"]["ratio_to_previous"] == 1.5 and cells["gcn"]["ratio_to_previous"] == 1.0
    assert cells["gat"]["ratio_to_previous"] is None
    out = capsys.readouterr().out
    assert "dblp re_gcn: 0.0900 s/epoch, 1.50x the previous figure (0.0600)" in out
    assert "| 1.50 |" in (tmp_path / "benchmark.md").read_text()


def test_the_scale_benchmark_reads_its_previous_epochs(tmp_path):
    scale = _module("scale_benchmark")
    path = tmp_path / "old.json"
    assert scale.previous_epochs(path) == {}  # no earlier report
    path.write_text(
        json.dumps(
            {"models": [{"model": "re_gcn", "train_s_per_epoch": 950.0}, {"model": "re_gat", "error": "exit code 1"}]}
        )
    )
    assert scale.previous_epochs(path) == {"re_gcn": 950.0}


def test_the_scale_accuracy_check_judges_a_model_against_its_last_committed_row():
    check = _module("scale_accuracy_check", "checks")
    earlier = [
        {
            "model": "re_gat",
            "commit": "a",
            "runs": 2,
            "test_acc": [98.0, 99.0],
            "test_acc_mean": 98.5,
            "test_acc_std": 0.5,
        },
        {
            "model": "re_gat",
            "commit": "b",
            "runs": 2,
            "test_acc": [98.4, 99.0],
            "test_acc_mean": 98.7,
            "test_acc_std": 0.3,
        },
    ]
    row = {"model": "re_gat", "runs": 2, "test_acc": [98.0, 98.2], "test_acc_mean": 98.1, "test_acc_std": 0.1}
    judged = check.judge(row, earlier, floor=0.5)
    assert judged["against"] == "b" and judged["tolerance"] == 0.5 and judged["within"] is False  # 0.6 below b
    assert check.judge(row | {"test_acc_mean": 98.3}, earlier, floor=0.5)["within"] is True
    assert check.judge(row | {"model": "re_gcn"}, earlier, floor=0.5)["within"] is None  # nothing to compare with
    md = check.markdown({"command": "python train.py ...", "floor": 0.5, "rows": [*earlier, judged]})
    assert "| re_gat |  | b | 2 | 98.40, 99.00 | 98.70 ± 0.30 |  |  |" in md and "| -0.60 | no |" in md


def _scale_report(scale, epoch_s):
    return {
        "scale": scale,
        "graph": {"num_edges": int(21_000_000 * scale)},
        "machine": "2 CPUs",
        "threads": 2,
        "fanouts": [25, 20],
        "batch_size": 1024,
        "models": [
            {
                "model": "re_gcn",
                "batches_per_epoch": int(615 * scale),
                "batch_sizes": {"batch_edges_0": 380_000.0, "batch_edges_last": 20_000.0},
                "train_s_per_epoch": epoch_s,
                "full_epoch": True,
                "peak_rss_gb": 1.0 + 7 * scale,
            },
            {"model": "re_gat", "error": "stopped"},  # a model that did not finish is left out, not a zero
        ],
    }


def test_scale_growth_reads_the_scale_reports_and_never_writes_over_its_report(tmp_path, monkeypatch):
    growth = _module("scale_growth")

    def no_measuring(cmd, **_):
        raise AssertionError(f"measured although its report is there: {cmd}")

    monkeypatch.setattr(growth.subprocess, "run", no_measuring)
    for s, t in ((0.05, 15.0), (0.5, 150.0)):
        (tmp_path / f"scale_{s:g}.json").write_text(json.dumps(_scale_report(s, t)))
    full = tmp_path / "full.json"
    full.write_text(json.dumps(_scale_report(1.0, 300.0)))
    out, fig = tmp_path / "growth", tmp_path / "growth.png"
    args = ["--scales", "0.05", "0.5", "1", "--models", "re_gcn", "--full", str(full), "--work", str(tmp_path)]
    assert growth.main(args + ["--out", str(out), "--fig", str(fig)]) == 0
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert [r["scale"] for r in rows] == [0.05, 0.5, 1.0]
    assert rows[0]["batches"] == 30 and abs(rows[0]["sampled_edges_m"] - 30 * 0.4) < 1e-9
    assert abs(rows[2]["s_per_m_sampled_edges"] - 300.0 / (615 * 0.4)) < 1e-9
    assert "| re_gcn | 0.5 |" in out.with_suffix(".md").read_text() and fig.stat().st_size > 0
    try:
        growth.main(args + ["--out", str(out), "--fig", str(fig)])
    except SystemExit as e:
        assert "exists" in str(e)
    else:
        raise AssertionError("an existing report was written over")


def test_the_blas_rows_check_fails_where_a_product_of_fewest_rows_differs(tmp_path, monkeypatch):
    """scripts/checks/blas_rows.py writes its table, and exits non-zero when some row count at or above
    receptive.FEWEST_ROWS (which the full-batch rows path relies on) gave other bits than the whole product."""
    import torch

    mod = _module("blas_rows", "checks")
    out, threads = tmp_path / "blas_rows", torch.get_num_threads()
    assert mod.main(["--threads", "3", "--widths", "8", "--out", str(out)]) in (0, 1)
    assert torch.get_num_threads() == threads  # the test session's thread count is left as it was
    table = (out.with_suffix(".md")).read_text()
    assert "| threads | dtype | inner_width | output_width | weight | most_rows_differing |" in table
    assert len(out.with_suffix(".csv").read_text().splitlines()) == 1 + 2 * 2 * 2  # dtypes x N in {4, 8} x layouts
    monkeypatch.setattr(mod, "differing_rows", lambda *a, **k: [1, 2, mod.FEWEST_ROWS])
    assert mod.main(["--threads", "1", "--widths", "8", "--out", str(out)]) == 1
    assert "SOME DIFFERING COUNTS ARE NOT BELOW IT" in out.with_suffix(".md").read_text()
    monkeypatch.setattr(mod, "differing_rows", lambda *a, **k: [1, 2, mod.FEWEST_ROWS - 1])
    assert mod.main(["--threads", "1", "--widths", "8", "--out", str(out)]) == 0
    assert "every differing count is below it" in out.with_suffix(".md").read_text()


def test_the_authors_trace_reads_their_runs_and_sets_them_beside_ours(tmp_path):
    """scripts/reference/authors_trace.py reads the committed log of the authors' RE-GATv2 on DBLP: run 0 finished
    (its test line), run 1 was cut off after 5 epochs and stays out of the mean; the table pairs run k with ours."""
    trace = _module("authors_trace", "reference")
    runs = trace.parse((REPO / "results/reference_logs/authors_regatv2_dblp.log").read_text())
    assert [(r["run"], r["finished"], r["epochs"]) for r in runs] == [(0, True, 51), (1, False, 5)]
    assert runs[0]["test_micro_f1"] == 30.03 and runs[0]["best_epoch"] == 0
    out = tmp_path / "cmp"
    ours = REPO / "results/cells/dblp_re_gatv2.json"
    args = [str(REPO / "results/reference_logs/authors_regatv2_dblp.log"), "--ours", str(ours), "--out", str(out)]
    assert trace.main(args) == 0
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["finished_runs"] == 1 and summary["test_micro_f1"] == [30.03, 0.0]
    rows = [r for r in out.with_suffix(".md").read_text().splitlines() if r.startswith("| 1 |")]
    assert rows and "unfinished" in rows[0]
    with pytest.raises(SystemExit, match="exists"):
        trace.main(args)
