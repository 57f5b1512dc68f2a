"""experiment=compare: every model on one graph the same way, resumed like every experiment, one table and one
figure with the winner picked on validation; a model the graph cannot train is refused in one line."""

import json
import re

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import REPO, run_train
from regnn.reporting.compare import MODELS

SMOKE = ["experiment=compare", "dataset=synthetic", "debug=smoke", "threads=1"]


def _compose(*overrides):
    import regnn.config  # noqa: F401  (the resolvers)

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("train", overrides=list(overrides), return_hydra_config=True)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The compare-smoke target's command (Makefile), then the same command again."""
    sweep = tmp_path_factory.mktemp("compare") / "sweep"
    first = run_train(*SMOKE, f"hydra.sweep.dir={sweep}", timeout=900)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    md = (sweep / "compare.md").read_text()
    estimates = json.loads((sweep / "compare_estimates.json").read_text())
    again = run_train(*SMOKE, f"hydra.sweep.dir={sweep}", timeout=600)
    return sweep, md, again, (first.stdout + first.stderr, estimates)


def test_the_make_target_runs_this_command():
    rule = re.search(r"^compare-smoke:.*\n\t(.*)$", (REPO / "Makefile").read_text(), flags=re.M).group(1)
    assert all(o in rule for o in ["experiment=compare", "dataset=synthetic", "debug=smoke", "hydra.sweep.dir="])


def test_the_table_and_figure_hold_every_model_and_the_winner_by_validation(smoke):
    sweep, md, _, _ = smoke
    df = pd.read_csv(sweep / "compare.csv")
    assert list(df.model) == list(MODELS) and (df.runs == 2).all()  # debug=smoke: 2 runs of every model
    for m in MODELS:  # every row is its cell's results.json, read back
        res = json.loads((sweep / f"synthetic_{m}" / "results.json").read_text())
        row = df[df.model == m].iloc[0]
        assert row.val_micro_f1_mean == pytest.approx(res["metrics"]["val_micro_f1"]["mean"], abs=1e-4)
        assert row.test_macro_f1_std == pytest.approx(res["metrics"]["test_macro_f1"]["std"], abs=1e-4)
        assert res["seeds"] == [0, 1]  # the same seeds for every model
    assert df.winner.sum() == 1
    assert df[df.winner].val_micro_f1_mean.item() == df.val_micro_f1_mean.max()
    winner = df[df.winner].label.item()
    assert f"**{winner}** (winner)" in md and f"Winner: {winner}" in md
    for label, collapsed in zip(df.label, df.collapsed):  # smoke runs are short: a model may collapse in one
        assert f"| {label}{' (collapsed)' if collapsed else ''} |" in md or f"**{label}**" in md
        assert collapsed == (f"Collapsed: {label}:" in md)
    assert (sweep / "compare.png").stat().st_size > 10_000


def test_the_same_command_again_skips_every_finished_cell_and_renders_again(smoke):
    sweep, md, again, _ = smoke
    log = again.stdout + again.stderr
    assert again.returncode == 0, log[-3000:]
    assert log.count("already holds results; skipped (resume=true)") == len(MODELS)
    assert (sweep / "compare.md").read_text() == md


def test_each_models_cost_is_estimated_and_printed_before_any_cell_trains(smoke):
    sweep, _, again, (log, estimates) = smoke
    assert log.index("compare: estimates on synthetic") < log.index("Launching")
    rows = estimates["models"]
    assert list(rows) == list(MODELS) and estimates["budget_min"] is None
    cap = OmegaConf.load(sweep / "synthetic_mlp" / "config.yaml").trainer.max_epochs
    for m, r in rows.items():  # every run to the cap: what the cell costs at most
        assert r["status"] == "pending" and r["s_per_epoch"] > 0 and (r["runs"], r["max_epochs"]) == (2, cap)
        assert r["workers"] == 1  # the synthetic graph is too small for worker processes
        assert r["estimate_s"] == pytest.approx(r["s_per_epoch"] * 2 * cap)
        patience = OmegaConf.load(sweep / f"synthetic_{m}" / "config.yaml").trainer.patience
        assert r["expected_s"] == pytest.approx(r["s_per_epoch"] * 2 * min(cap, 2 * patience))  # the stopping rule
        assert re.search(rf"^{m} +{r['s_per_epoch']:.3f} +2 +1 +{cap} ", log, flags=re.M)
    md = (sweep / "compare.md").read_text()  # afterwards, each estimate beside the time its cell took
    assert "Time, estimated before training beside measured: MLP expected ~" in md and "), took " in md
    # the same command again: every cell is finished, nothing is timed
    again_rows = json.loads((sweep / "compare_estimates.json").read_text())["models"]
    assert {r["status"] for r in again_rows.values()} == {"done"}
    assert "compare: timing" not in again.stdout + again.stderr


def test_a_budget_keeps_the_cheapest_models_that_fit_and_skips_the_others():
    from regnn.experiments.estimate import fit_budget

    rows = {m: {"status": "pending", "estimate_s": s} for m, s in (("gat", 300.0), ("mlp", 20.0), ("gcn", 50.0))}
    rows["rgcn"] = {"status": "done"}
    fit_budget(rows, 1.5)  # 90 s: mlp (20) and gcn (50) fit, gat (300) does not
    assert {m: r["status"] for m, r in rows.items()} == {
        "gat": "skipped",
        "mlp": "pending",
        "gcn": "pending",
        "rgcn": "done",
    }
    assert "estimated 5:00 does not fit in what is left of compare.budget=1.5 minutes (20.0s)" in rows["gat"]["reason"]


def test_a_budget_that_fits_no_model_is_refused_naming_the_budget_the_cheapest_needs():
    from regnn.errors import ConfigError
    from regnn.experiments.estimate import expected_epochs, fit_budget

    rows = {"gat": {"status": "pending", "expected_s": 300.0, "estimate_s": 900.0}}
    rows["mlp"] = {"status": "pending", "expected_s": 130.0, "estimate_s": 400.0}
    with pytest.raises(ConfigError, match=r"compare.budget=2 minutes fits no model: the cheapest, mlp, is expected "):
        fit_budget(rows, 2)
    with pytest.raises(ConfigError, match=r"give compare.budget=3 or more"):
        fit_budget(rows, 2)
    fit_budget(rows, 5)  # the expected time decides, not the cap's: mlp fits in 300 s, gat then does not
    assert rows["mlp"]["status"] == "pending" and rows["gat"]["status"] == "skipped"
    assert expected_epochs(200, 50) == 100 and expected_epochs(60, 50) == 60 and expected_epochs(200, 0) == 200


@pytest.mark.onepython
def test_a_budget_below_every_model_trains_nothing_and_says_what_it_needs(tmp_path):
    sweep = tmp_path / "sweep"
    # a budget below any estimate, whatever this machine's speed
    r = run_train(*SMOKE, "model=mlp,re_gcn", "compare.budget=1e-9", f"hydra.sweep.dir={sweep}", timeout=600)
    log = r.stdout + r.stderr
    assert r.returncode == 2 and "fits no model: the cheapest, " in r.stderr and "Traceback" not in log
    assert "Launching" not in log and not list(sweep.glob("*/results.json"))  # no cell trained
    bad = run_train(*SMOKE, "compare.budget=-1", f"hydra.sweep.dir={tmp_path / 'bad'}")
    assert bad.returncode == 2 and "compare.budget=-1 is not valid" in bad.stderr and "Launching" not in bad.stderr


@pytest.mark.onepython
def test_a_model_the_graph_cannot_train_is_refused_in_one_line_and_the_others_go_on(tmp_path):
    sweep = tmp_path / "sweep"
    r = run_train(
        "experiment=compare",
        "dataset=counts",
        "debug=smoke",
        "threads=1",
        "model=han,mlp",
        f"hydra.sweep.dir={sweep}",
        timeout=600,
    )
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-3000:]
    refused = [line for line in log.splitlines() if "] refused:" in line]  # the cell's line
    assert len(refused) == 1 and "han needs meta-paths" in refused[0] and "Traceback" not in log
    # the estimates' row: s/epoch, runs, cap, expected, at most
    assert re.search(r"^han +– +– +– +– +– +– +refused: han needs meta-paths", log, flags=re.M)
    df = pd.read_csv(sweep / "compare.csv")
    assert list(df.model) == ["han", "mlp"] and list(df.source) == ["refused", "sweep"]
    assert df.winner.tolist() == [False, True]
    assert "Refused on this graph: HAN: han needs meta-paths" in (sweep / "compare.md").read_text()
    # on its own, the same model stops with the same line (exit 2), no traceback
    one = run_train("dataset=counts", "model=han", "debug=smoke", f"hydra.run.dir={tmp_path / 'one'}")
    assert one.returncode == 2 and "han needs meta-paths" in one.stderr and "Traceback" not in one.stderr


def test_a_users_graph_takes_meta_paths_on_the_command_line_as_the_refusal_says():
    cfg = _compose(
        "dataset=custom", "dataset.path=/nowhere", "model=han", 'dataset.metapaths={IUI: ["item->user", "user->item"]}'
    )
    assert OmegaConf.to_container(cfg.model.metapaths, resolve=True) == {"IUI": ["item->user", "user->item"]}
    assert _compose("dataset=custom", "model=han").dataset.metapaths is None  # the refusal's case


def _cell(pool, name, val, test, archived=None, **summary):
    m = {
        k: {"mean": v, "std": 0.1}
        for k, v in (("val_micro_f1", val), ("test_micro_f1", test), ("val_macro_f1", val), ("test_macro_f1", test))
    }
    m["epoch_time_s"] = {"mean": 0.5, "std": 0.0}
    dataset, model = name.split("_", 1)
    res = {"dataset": dataset, "model": model, "runs": 10, "metrics": m, **summary}
    if archived:
        archived.mkdir(parents=True, exist_ok=True)
        (archived / f"{name}.json").write_text(json.dumps({"results": res, "relation_weights": []}))
    else:
        (pool / name).mkdir(parents=True)
        (pool / name / "results.json").write_text(json.dumps(res))


def test_the_winner_is_picked_on_validation_never_on_test_and_archived_cells_are_named(tmp_path):
    from regnn.reporting.compare import main

    pool, archive = tmp_path / "cells", tmp_path / "archive"
    _cell(pool, "dblp_gcn", val=90.0, test=95.0)  # best on test
    _cell(pool, "dblp_re_gcn", val=92.0, test=93.0)  # best on validation
    _cell(pool, "dblp_mlp", val=80.0, test=80.0, archived=archive)
    assert (
        main(
            [
                str(pool),
                "--dataset",
                "dblp",
                "--models",
                "mlp",
                "gcn",
                "re_gcn",
                "rgcn",
                "--archive",
                str(archive),
                "--out",
                str(tmp_path / "out" / "cmp"),
            ]
        )
        == 0
    )
    df = pd.read_csv(tmp_path / "out" / "cmp.csv")
    assert df[df.winner].model.tolist() == ["re_gcn"]
    assert list(df.source) == ["archive", "sweep", "sweep", "missing"]
    md = (tmp_path / "out" / "cmp.md").read_text()
    assert (
        f"Cells read from {archive}" in md
        and "dblp_mlp" in md
        and "Not trained yet, so not in this table: dblp_rgcn" in md
    )


def test_a_model_whose_runs_collapsed_to_chance_is_marked_not_silently_averaged(tmp_path):
    from regnn.reporting.compare import main

    pool = tmp_path / "cells"
    runs = [{"run": i, "test_micro_f1": t} for i, t in enumerate([92.4, 36.1, 93.1, 40.0, 92.9])]
    _cell(pool, "mine_simple_hgn", val=70.0, test=70.9, per_run=runs, chance_test_micro_f1=38.0)
    weak = [{"run": i, "test_micro_f1": t} for i, t in enumerate([60.0, 61.0, 44.0])]  # weak, never at chance
    _cell(pool, "mine_gcn", val=60.0, test=55.0, per_run=weak, chance_test_micro_f1=38.0)
    _cell(pool, "mine_re_gcn", val=92.0, test=92.8)  # a summary without the chance level: nothing to judge by
    flat = [{"run": i, "test_micro_f1": t} for i, t in enumerate([38.0, 51.0])]  # weak and noisy, not a collapse
    _cell(pool, "mine_mlp", val=40.0, test=38.7, per_run=flat, chance_test_micro_f1=38.0)
    assert (
        main(
            [
                str(pool),
                "--dataset",
                "mine",
                "--models",
                "mlp",
                "gcn",
                "simple_hgn",
                "re_gcn",
                "--out",
                str(tmp_path / "cmp"),
            ]
        )
        == 0
    )
    df = pd.read_csv(tmp_path / "cmp.csv").set_index("model")
    assert df.runs_at_chance[["mlp", "gcn", "simple_hgn"]].tolist() == [1, 0, 2] and pd.isna(
        df.runs_at_chance["re_gcn"]
    )
    assert df.collapsed.tolist() == [False, False, True, False]
    assert df.learnt_test_micro_f1["simple_hgn"] == pytest.approx((92.4 + 93.1 + 92.9) / 3)
    md = (tmp_path / "cmp.md").read_text()
    assert "Simple-HGN (collapsed)" in md and "| 10, 2 at chance |" in md  # 36.1: at chance, not also below it
    assert "Collapsed: Simple-HGN: 2 of 10 runs at chance (test Micro-F1 within 5 of 38.00" in md
    assert "92.80 test Micro-F1 on average" in md and "Collapsed: GCN" not in md and "Collapsed: MLP" not in md
    assert "| MLP | 10 |" in md


def test_on_the_built_in_datasets_compare_cells_are_the_table_2_cells():
    from regnn.runs.computation import computation

    for dataset in ("dblp", "acm", "imdb"):
        for model in MODELS:
            cmp_cfg = _compose("experiment=compare", f"dataset={dataset}", f"model={model}")
            table = _compose("experiment=table_baselines", f"dataset={dataset}", f"model={model}")
            assert cmp_cfg.hydra.sweep.dir == table.hydra.sweep.dir and cmp_cfg.cell == table.cell
            same = [
                OmegaConf.to_container(OmegaConf.masked_copy(c, [k for k in c if k != "hydra"]), resolve=True)
                for c in (cmp_cfg, table)
            ]
            assert computation(same[0]) == computation(same[1])  # a cell trained by one is resumed by the other
    tuned = _compose("experiment=compare", "dataset=dblp", "compare.tune=true")
    assert tuned.hydra.sweep.dir.endswith("compare/dblp_tuned")  # never the untuned pool
    own = _compose("experiment=compare", "dataset=counts")
    assert own.hydra.sweep.dir.endswith("compare/counts") and own.runs == 10 and own.resume


@pytest.mark.slow
def test_compare_tune_tunes_each_model_then_trains_its_cell_with_the_best_setting(tmp_path):
    args = [
        "experiment=compare",
        "dataset=synthetic",
        "debug=smoke",
        "threads=1",
        "model=rgcn",
        "compare.tune=true",
        "tune.trials=1",
        "tune.seeds=1",
        f"paths.output_dir={tmp_path}",
    ]
    r = run_train(*args, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    sweep = tmp_path / "compare" / "synthetic_tuned"
    best = OmegaConf.load(sweep / "synthetic_rgcn" / "tune" / "tuned" / "best.yaml")
    cell = OmegaConf.load(sweep / "synthetic_rgcn" / "config.yaml")
    assert cell.model.num_bases == best.model.num_bases and cell.optimizer.lr == pytest.approx(best.optimizer.lr)
    assert json.loads((sweep / "synthetic_rgcn" / "results.json").read_text())["runs"] == 2
    assert pd.read_csv(sweep / "compare.csv").model.tolist() == ["rgcn"]
    again = run_train(*args, timeout=900)  # resumed: no trial and no run trained again
    log = again.stdout + again.stderr
    assert again.returncode == 0 and "1 of 1 trials finished, 0 to go" in log and "skipped (resume=true)" in log


def test_a_sweep_resumed_with_another_model_list_still_renders_every_cell_it_holds(tmp_path):
    """multirun.yaml names the last model list; cells finished under an earlier list are rendered all the same, and a
    cell begun but unfinished is listed as not trained yet."""
    from regnn.reporting.compare import main

    sweep = tmp_path / "sweep"
    _cell(sweep, "mine_mlp", val=80.0, test=79.0)
    _cell(sweep, "mine_re_gcn", val=91.0, test=90.0)  # from the sweep's earlier model list
    (sweep / "mine_gat").mkdir()
    (sweep / "mine_gat" / "config.yaml").write_text("model: {name: gat}\n")  # started, not finished
    (sweep / "multirun.yaml").write_text(
        "dataset: {name: mine}\nhydra:\n  sweeper: {params: {model: 'mlp,gcn'}}\n  overrides: {task: []}\n"
    )
    assert main([str(sweep), "--out", str(tmp_path / "cmp")]) == 0
    df = pd.read_csv(tmp_path / "cmp.csv")
    assert df.model.tolist() == ["mlp", "gcn", "gat", "re_gcn"]
    assert df.source.tolist() == ["sweep", "missing", "missing", "sweep"]
    assert df[df.winner].model.tolist() == ["re_gcn"]
    assert "mine_gat" in (tmp_path / "cmp.md").read_text()


def test_a_run_is_at_chance_only_within_five_points_of_it_on_either_side():
    from regnn.evaluation.metrics import runs_at_chance

    runs = [{"test_micro_f1": t} for t in (18.0, 22.9, 13.1, 42.0, 23.5, 12.0)]
    assert runs_at_chance(runs, 18.0) == 3  # 18, 22.9 and 13.1; 42 learned, 23.5 and 12 are more than 5 away
    assert runs_at_chance([{"failed": "nan"}], 18.0) == 0 and runs_at_chance(runs, None) is None


def test_runs_cut_off_by_the_epoch_cap_are_marked_and_the_winners_lead_is_tested_against_the_runs_spread(tmp_path):
    from regnn.reporting.compare import main

    pool = tmp_path / "cells"

    def runs(vals, epochs):
        keys = ("run", "seed", "val_micro_f1", "test_micro_f1", "epochs")
        return [dict(zip(keys, (i, i, v, v, epochs))) for i, v in enumerate(vals)]

    _cell(pool, "mine_re_gat", val=80.6, test=80.0, per_run=runs([80.0, 81.5, 80.3], 200))  # every run at the cap
    _cell(pool, "mine_re_gcn", val=80.1, test=80.0, per_run=runs([80.5, 79.0, 80.8], 57))
    _cell(pool, "mine_mlp", val=70.0, test=70.0, per_run=runs([70.0, 70.1, 69.9], 80))
    for m in ("re_gat", "re_gcn", "mlp"):
        (pool / f"mine_{m}" / "config.yaml").write_text("trainer:\n  max_epochs: 200\n")
    args = [str(pool), "--dataset", "mine", "--out", str(tmp_path / "cmp")]
    assert main([*args, "--models", "mlp", "re_gcn", "re_gat"]) == 0
    df = pd.read_csv(tmp_path / "cmp.csv").set_index("model")
    assert df.capped_runs.tolist() == [0, 0, 3] and df.lead_beyond_noise["re_gat"] == False  # noqa: E712
    md = (tmp_path / "cmp.md").read_text()
    assert "| 10, 3 at the epoch cap |" in md  # the helper writes runs=10 beside its 3 per-run records
    assert "Epoch cap: RE-GAT: 3 of 10 runs trained all 200 allowed epochs" in md
    assert "Lead: RE-GAT over the runner-up RE-GCN: +0.50 validation Micro-F1, paired over 3 seeds" in md
    assert "within the spread of the runs" in md
    # a steady lead on every seed is more than the spread
    import shutil

    for m in ("re_gat", "re_gcn"):
        shutil.rmtree(pool / f"mine_{m}")
    _cell(pool, "mine_re_gat", val=90.1, test=90.0, per_run=runs([90.0, 90.2, 90.1], 50))
    _cell(pool, "mine_re_gcn", val=80.1, test=80.0, per_run=runs([80.0, 80.3, 80.0], 50))
    assert main([*args, "--models", "mlp", "re_gcn", "re_gat"]) == 0
    assert "more than the spread of the runs" in (tmp_path / "cmp.md").read_text()


def test_chance_is_a_line_runs_below_it_are_marked_and_a_tie_on_validation_has_no_winner(tmp_path):
    from regnn.reporting.compare import main

    pool = tmp_path / "cells"
    below = [{"run": i, "test_micro_f1": t} for i, t in enumerate([70.0, 50.0, 71.0, None])]  # None: not scored
    _cell(pool, "mine_gcn", val=92.86, test=95.0, per_run=below, chance_test_micro_f1=55.9)
    _cell(pool, "mine_re_gcn", val=92.86, test=93.0, chance_test_micro_f1=55.9)
    _cell(pool, "mine_mlp", val=60.0, test=55.0, chance_test_micro_f1=55.9)
    args = [str(pool), "--dataset", "mine", "--models", "mlp", "gcn", "re_gcn", "--out", str(tmp_path / "cmp")]
    assert main(args) == 0
    df = pd.read_csv(tmp_path / "cmp.csv").set_index("model")
    assert not df.winner.any() and df.tied.tolist() == [False, True, True]
    md = (tmp_path / "cmp.md").read_text()
    assert "GCN (tied on validation)" in md and "(winner)" not in md and "t inf" not in md
    assert "Tie on validation: GCN, RE-GCN share the best mean validation Micro-F1 (92.86)" in md
    assert "their test Micro-F1 (shown, not used to pick): GCN 95.00, RE-GCN 93.00" in md
    assert "Chance: always predicting the largest class scores 55.90 test Micro-F1" in md
    assert "Below chance on average: MLP" in md and "Runs below chance: GCN: 1 of 10" in md
    assert "| 10, 1 below chance |" in md
    assert (tmp_path / "cmp.png").stat().st_size > 0


def test_each_model_is_set_against_the_best_seed_by_seed_with_its_interval(tmp_path):
    from regnn.reporting.compare import main

    pool = tmp_path / "cells"

    def runs(vals):
        return [{"run": s, "seed": s, "val_micro_f1": v, "test_micro_f1": v} for s, v in enumerate(vals)]

    _cell(pool, "mine_re_gcn", val=91.0, test=91.0, per_run=runs([90.0, 91.0, 92.0]))
    _cell(pool, "mine_gcn", val=89.0, test=89.0, per_run=runs([88.0, 89.5, 89.5]))  # 2.0, 1.5, 2.5 below
    _cell(pool, "mine_mlp", val=80.0, test=80.0)  # no per-seed scores: nothing to pair
    args = [str(pool), "--dataset", "mine", "--models", "mlp", "gcn", "re_gcn", "--out", str(tmp_path / "cmp")]
    assert main(args) == 0
    df = pd.read_csv(tmp_path / "cmp.csv", keep_default_na=False).set_index("model")
    assert df.val_vs_best["re_gcn"] == "" and df.val_vs_best["mlp"] == ""
    assert df.val_vs_best["gcn"].startswith("-2.00 [")  # (-2.0 - 1.5 - 2.5) / 3, its t-interval below 0
    lo, hi = (float(x) for x in df.val_vs_best["gcn"][7:-1].split(", "))
    assert lo < hi < 0
    md = (tmp_path / "cmp.md").read_text()
    assert "val vs best, paired" in md and "an interval that spans 0 means these runs do not separate" in md


def test_cells_that_disagree_on_the_chance_level_get_no_chance_line_and_are_named(tmp_path):
    from regnn.reporting.compare import main

    pool = tmp_path / "cells"
    _cell(pool, "mine_gcn", val=80.0, test=80.0, chance_test_micro_f1=55.9)
    _cell(pool, "mine_re_gcn", val=90.0, test=90.0, chance_test_micro_f1=40.0)  # another test split's
    args = [str(pool), "--dataset", "mine", "--models", "gcn", "re_gcn", "--out", str(tmp_path / "cmp")]
    assert main(args) == 0
    md = (tmp_path / "cmp.md").read_text()
    assert "Chance differs between the cells (GCN 55.90, RE-GCN 40.00)" in md and "Chance: always" not in md


def test_until_separated_adds_seeds_to_the_models_close_to_the_best_until_they_separate_or_reach_the_limit(tmp_path):
    """The models whose paired interval to the best spans 0 (and the best) are extended, twice the runs at a time;
    a separated model and a tie (the same score on every seed) are not; the limit stops the rounds."""
    from regnn.experiments import separate
    from regnn.reporting.compare_notes import separation_note

    # seed s's validation score per model: "near" trails the best by 0.5 with noise of 1, so 2 runs cannot tell
    # them apart and more can; "far" is 30 below; "twin" equals the best on every seed
    noise = [0.9, -0.8, 0.7, -0.9, 0.8, -0.7, 0.9, -0.8, 0.6, -0.6, 0.7, -0.5, 0.8, -0.9, 0.6, -0.7]
    score = {"best": lambda s: 90.0, "near": lambda s: 89.5 + noise[s], "far": lambda s: 60.0 + noise[s]}
    trained = []

    def train_more(model, runs):
        trained.append((model, runs))
        per_run = [{"seed": s, "val_micro_f1": score[model](s)} for s in range(runs)]
        (tmp_path / f"g_{model}").mkdir(exist_ok=True)
        (tmp_path / f"g_{model}" / "results.json").write_text(json.dumps({"runs": runs, "per_run": per_run}))

    for m in score:
        train_more(m, 2)
    trained.clear()
    out = separate.extend(tmp_path, "g", list(score), 16, train_more)
    assert ("far", 4) not in trained and {m for m, _ in trained} == {"best", "near"}
    assert [r for m, r in trained if m == "near"] == [4, 8, 16][: len([m for m, _ in trained if m == "near"])]
    assert out["unseparated"] == [] and out["runs"]["near"] in (4, 8, 16) and out["runs"]["far"] == 2
    (tmp_path / "separation.json").write_text(json.dumps(out | {"limit": 16}))
    assert "every model is separated from the best" in separation_note(tmp_path)[0]

    trained.clear()
    score["near"] = lambda s: 90.0 - 0.01 * (s % 2)  # a hair below on odd seeds: never separated within 4 runs
    score["far"] = score["best"]  # a tie: no seed separates it, never extended
    for m in score:
        train_more(m, 2)
    trained.clear()
    out = separate.extend(tmp_path, "g", list(score), 4, train_more)
    assert trained == [("best", 4), ("near", 4)] and out["unseparated"] == ["near"]
    assert separate.unseparated({"a": {"per_run": [{"seed": 0, "val_micro_f1": 1.0}]}}) == []  # one model


def test_until_separated_keeps_the_table_2_cells_of_the_shared_pool_at_their_runs(caplog):
    from regnn.experiments.compare_sweep import more_seeds

    cfg = _compose("experiment=compare", "dataset=dblp", "compare.until_separated=30")
    with caplog.at_level("WARNING", logger="regnn"):
        more_seeds(cfg, REPO / "nonexistent")
    assert "not extended" in caplog.text


def test_the_estimate_counts_runs_trained_side_by_side_in_workers_as_one_round():
    """3 runs in 2 workers of 1 thread: two rounds of runs, each epoch timed on the thread a run will have."""
    from regnn.experiments import estimate

    cfg = _compose(*SMOKE, "workers=2", "threads=2", "runs=3")
    assert estimate.workers_of(cfg) == (2, 1)
    assert estimate.workers_of(_compose(*SMOKE, "workers=1", "threads=2")) == (1, 2)
    row = estimate.estimate(cfg, 2)
    cap = int(cfg.trainer.max_epochs)
    assert row["workers"] == 2 and row["estimate_s"] == pytest.approx(row["s_per_epoch"] * 2 * cap)


def test_the_light_protocol_gives_every_model_the_same_small_budget_in_a_folder_of_its_own_and_the_table_names_it():
    from regnn.experiments.compare_sweep import tune_budget, tuned_requests
    from regnn.reporting.compare_notes import protocol_note

    light = _compose("experiment=compare", "dataset=counts", "compare.tune=light")
    full = _compose("experiment=compare", "dataset=counts", "compare.tune=true")
    assert light.hydra.sweep.dir.endswith("compare/counts_light") and full.hydra.sweep.dir.endswith("counts_tuned")
    assert tune_budget(light) == {"trials": 8, "seeds": 1, "finalists": 2, "finalist_seeds": 3}
    assert tune_budget(full) == {"trials": 30, "seeds": 2, "finalists": 3, "finalist_seeds": 5}
    for cfg in (_compose("experiment=compare", "dataset=counts", "compare.tune=light", f"model={m}") for m in MODELS):
        (_, tune), _ = tuned_requests(cfg, REPO / "nowhere", ["compare.tune=light"])
        assert {k: tune.settings[f"tune.{k}"] for k in tune_budget(light)} == tune_budget(light)
    for cfg, says in ((light, "light tune (compare.tune=light"), (full, "tuned (compare.tune=true)")):
        conf = OmegaConf.to_container(cfg, resolve=False)
        assert says in protocol_note(conf)[0] and str(tune_budget(cfg)["trials"]) in protocol_note(conf)[0]
    untuned = OmegaConf.to_container(_compose("experiment=compare", "dataset=counts"), resolve=False)
    assert protocol_note(untuned)[0].startswith("Protocol: every model with its defaults, untuned")
    assert protocol_note({}) == []
