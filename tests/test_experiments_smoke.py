"""The smoke variant of every make target: the same sweep and renderers on the synthetic graph (seconds)."""

import subprocess

import pandas as pd
import pytest

from conftest import REPO, SET_UP
from regnn.catalog import FIGURE3_BACKBONES, TABLE2_MODELS
from regnn.reporting.experiments import EXPERIMENTS

# every declared experiment's -smoke target and its files (regnn.reporting.experiments: the conf/experiment/
# configs that declare a table or figure, and Figure 8's measurement)
TARGETS = {f"{e.target}-smoke": list(e.outputs) for e in EXPERIMENTS}


@pytest.fixture(scope="module")
def smoke_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("smoke")


def make(target: str, smoke_dir, **variables) -> subprocess.CompletedProcess:
    args = ["make", "-s", *SET_UP, target, f"SMOKE={smoke_dir}"] + [f"{k}={v}" for k, v in variables.items()]
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=900)


def _ablation_rows(results):
    abl = pd.read_csv(results / "table_ablation.csv")
    assert list(abl.model) == ["gcn", "gcn_s", "gcn_e", "re_gcn", "gat", "gat_s", "gat_e", "re_gat"]
    assert (
        abl.loc[abl.model == "gcn_e", "edge_emb"].item() and not abl.loc[abl.model == "gcn_e", "self_loop_emb"].item()
    )


def _backbone_rows(results):
    bb = pd.read_csv(results / "table_backbones.csv")
    assert list(bb.backbone) == list(FIGURE3_BACKBONES)
    assert (bb.seeds_paired > 0).all() and (bb.seeds_re_ahead <= bb.seeds_paired).all()  # per-seed pairing found


def _lambda_rows(results):
    lam = pd.read_csv(results / "table_lambda.csv")
    assert list(lam["lambda"]) == [0.001, 1.0, 100.0, 1000.0]
    # lambda 0.001 barely moves the weights away from 1 in 4 epochs; lambda 100 moves them
    w = lam.filter(like="w1[")
    assert (w.iloc[0] - 1).abs().max() < 0.01 and (w.iloc[2] - 1).abs().max() > 0.1


def _baseline_rows(results):
    base = pd.read_csv(results / "table_baselines.csv")  # every baseline beside the four Table 2 rows
    assert set(base.model) == set(TABLE2_MODELS)
    assert set(base.loc[base.model.isin(["gcn_m", "gat_m"]), "metapath"]) <= {"ISI", "INI"}


def _efficiency_rows(results):
    eff = pd.read_csv(results / "table_efficiency.csv")
    n = dict(zip(eff.model, eff.num_parameters))
    assert n["re_gcn"] - n["gcn"] == 9 * 4  # (6 relation + 3 node types) x 4 layers on the synthetic graph


ROWS = {
    "table-ablation-smoke": _ablation_rows,
    "fig-backbones-smoke": _backbone_rows,
    "fig-lambda-smoke": _lambda_rows,
    "table-baselines-smoke": _baseline_rows,
    "fig-efficiency-smoke": _efficiency_rows,
}


# in the fast suite the targets of Table 2 and of Figures 3 and 5; the others run in `make test-all` (the sweep
# and the cell pool they use are the same, only their renderers differ; every baseline trains in test_baselines*)
SLOW_TARGETS = (
    "table-clustering-smoke",
    "fig-efficiency-smoke",
    "fig-case-study-smoke",
    "fig-lambda-smoke",
    "table-ablation-smoke",
    "table-baselines-smoke",
)


@pytest.mark.parametrize(
    "target", [pytest.param(t, marks=pytest.mark.slow) if t in SLOW_TARGETS else t for t in TARGETS]
)
@pytest.mark.onepython
def test_smoke_target_renders_its_outputs(target, smoke_dir):
    """Each target on its own (the tests may run in any order, in parallel workers): its files, and for the
    tables with fixed rows, every model / backbone / setting in its row."""
    extra = {"EFFICIENCY_MODELS": "gcn re_gcn"} if "efficiency" in target else {}
    p = make(target, smoke_dir, **extra)
    assert p.returncode == 0, p.stderr[-3000:]
    for name in TARGETS[target]:
        f = smoke_dir / "results" / name
        assert f.exists() and f.stat().st_size > 0, f"{target} did not write {name}"
        if name.endswith(".csv"):
            assert len(pd.read_csv(f)) >= 1
    if target in ROWS:
        ROWS[target](smoke_dir / "results")


@pytest.mark.slow  # make test-all: the t-SNE renderer itself runs in fig-tsne-smoke
def test_tsne_with_allow_missing_draws_the_trained_cells_and_names_the_rest(tmp_path):
    import json
    import sys

    import numpy as np

    run = tmp_path / "cells" / "dblp_re_gcn" / "runs" / "run_00"
    run.mkdir(parents=True)
    (run.parent.parent / "results.json").write_text(json.dumps({"runs": 1}))
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 30)
    np.savez_compressed(
        run / "embeddings.npz",
        node_ids=np.arange(90),
        labels=labels,
        embeddings=rng.normal(size=(90, 8)) + 4 * labels[:, None],
    )
    cmd = [sys.executable, "-m", "regnn.reporting.tsne", "--cells", str(tmp_path / "cells"), "--out", str(tmp_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 1 and "dblp_gcn" in p.stderr and not (tmp_path / "fig_tsne.png").exists()
    p = subprocess.run(cmd + ["--allow-missing"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert "not drawn (not trained yet): dblp_gcn" in p.stderr and (tmp_path / "fig_tsne.png").stat().st_size > 0


@pytest.mark.slow  # make test-all: a benchmark script, not a path of train.py
def test_benchmark_pairs_plain_and_re_in_one_process(tmp_path):
    """The benchmark's ratio measurement: cells, then the plain/RE pair stepped in turn, each in two processes (the
    median of theirs), written as data."""
    import json
    import statistics
    import sys

    p = subprocess.run(
        [
            sys.executable,
            "scripts/bench/benchmark.py",
            "--datasets",
            "synthetic",
            "--models",
            "gcn",
            "re_gcn",
            "--epochs",
            "4",
            "--warmup",
            "1",
            "--repeats",
            "2",
            "--no-job",
            "--out",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads((tmp_path / "benchmark.json").read_text())
    assert [c["model"] for c in out["cells"]] == ["gcn", "re_gcn"]
    for c in out["cells"]:
        assert c["processes"] == 2 and len(c["process_median_epoch_s"]) == 2
        assert c["median_epoch_s"] == pytest.approx(statistics.median(c["process_median_epoch_s"]))
    (pair,) = out["pairs"]
    assert pair["processes"] == 2
    assert pair["ratio_of_medians"] == pytest.approx(statistics.median(pair["process_ratio_of_medians"]))
    assert (pair["plain"], pair["re"], pair["epochs_timed"]) == ("gcn", "re_gcn", 4)
    assert pair["plain_median_epoch_s"] > 0 and pair["re_median_epoch_s"] > 0
    md = (tmp_path / "benchmark.md").read_text()
    assert "epoch by epoch in one process" in md
    # how it was made
    assert "`python scripts/bench/benchmark.py --datasets synthetic --models gcn re_gcn --epochs 4" in md
    assert out["meta"]["command"].endswith(f"--out {tmp_path}")


def test_a_table_names_the_runs_trained_on_a_gpu():
    from regnn.reporting.collect import device_note, runs_text

    assert runs_text([0, 1, 2, 5]) == "runs 0-2, 5" and runs_text([7]) == "run 7"
    assert device_note({"dblp_gcn": {"cpu": [0, 1]}}) is None
    note = device_note(
        {"dblp_gcn": {"cpu": [0, 1]}, "dblp_gat": {"cuda (H)": [0, 1, 2], "cpu": [3]}, "acm_gat": {"cuda (H)": [0, 1]}}
    )
    assert "dblp_gat (runs 0-2 on cuda (H))" in note and "acm_gat (all runs on cuda (H))" in note
    assert "dblp_gcn" not in note


def test_allow_missing_renders_on_past_a_figure_that_needs_every_cell(tmp_path):
    """The lambda study (one figure over every lambda) and the case study (one cell): with cells missing each is
    kept as it was, named in the listing, and the experiments after it still render."""
    from regnn.reporting import experiments
    from regnn.reporting.cells import CellPool, MissingCells
    from regnn.reporting.lambda_study import render

    pool = CellPool(tmp_path / "cells", allow_missing=True)
    with pytest.raises(MissingCells) as err:
        render(pool, tmp_path, ["dblp"])
    assert "every lambda" in str(err.value) and "dblp_re_gcn_lambda0.001" in str(err.value)
    lam = next(e for e in experiments.EXPERIMENTS if e.renderer == "lambda_study")
    line = experiments.render_one(lam, CellPool(tmp_path / "cells", allow_missing=True), tmp_path)
    assert "kept results/table_lambda.csv" in line and not (tmp_path / "table_lambda.csv").exists()
    case = next(e for e in experiments.EXPERIMENTS if e.renderer == "case_study")
    line = experiments.render_one(case, CellPool(tmp_path / "cells", allow_missing=True), tmp_path)
    assert "kept results/case_study_weights.csv" in line and "draws this one cell" in line
