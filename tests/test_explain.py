"""explain.py: relation weights with their spread over the runs, masked and retrained ablation, the agreement of the
rankings; dataset.drop_relations; the planted graphs whose answer is known."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from conftest import REPO, run_train, trained_cell
from regnn.data.planted import make_planted, planted_names
from regnn.data.pruning import drop_relations, relation_groups, reverse_of, without
from regnn.errors import DataError
from regnn.evaluation.importance import auroc, interval, rank_agreement, summarise, top_k_hit

CELL = ["dataset=planted", "model=re_gcn", "runs=2", "trainer.max_epochs=40", "threads=1", "workers=1"]


def test_a_relation_goes_with_its_reverse_under_either_naming():
    data = make_planted(num_items=60, relations=3, planted=1, nodes_per_relation=12)
    g = data.graph
    assert reverse_of(g, "item->n0") == "n0->item" and reverse_of(g, "n2->item") == "item->n2"
    assert relation_groups(g) == [("item->n0", "n0->item"), ("item->n1", "n1->item"), ("item->n2", "n2->item")]
    from regnn.data.hetero import HeteroGraph

    e = (np.array([0, 1]), np.array([1, 0]))
    custom = HeteroGraph({("a", "buys", "b"): e, ("b", "rev_buys", "a"): e, ("a", "likes", "b"): e}, {"a": 2, "b": 2})
    assert reverse_of(custom, "buys") == "rev_buys" and reverse_of(custom, "rev_buys") == "buys"
    assert reverse_of(custom, "likes") is None  # one direction only: dropped alone
    assert relation_groups(custom) == [("buys", "rev_buys"), ("likes",)]


def test_dropping_takes_the_relation_and_its_reverse_and_refuses_what_it_cannot():
    data = make_planted(num_items=60, relations=3, planted=1, nodes_per_relation=12)
    dropped = drop_relations(data, ["item->n1"])
    assert sorted(dropped.graph.etypes) == ["item->n0", "item->n2", "n0->item", "n2->item"]
    assert data.graph.num_edges("item->n1") > 0  # the dataset given is left as it was
    with pytest.raises(DataError, match=r"\['item->x'\] is not a relation of this graph; its relations are"):
        drop_relations(data, ["item->x"])
    with pytest.raises(DataError, match="leaves no relation"):
        drop_relations(data, ["item->n0", "item->n1", "item->n2"])
    kept = without(data.graph, ["item->n1", "n1->item"], keep_slots=True)
    assert kept.etypes == data.graph.etypes and kept.num_edges("item->n1") == 0  # every relation keeps its id
    assert kept.num_edges("item->n0") == data.graph.num_edges("item->n0")


def test_intervals_and_rank_agreement_are_the_textbook_ones():
    from scipy import stats

    x = [1.0, 2.0, 4.0, 7.0]
    mean, low, high = interval(x)
    half = stats.t.ppf(0.975, 3) * np.std(x, ddof=1) / 2
    assert mean == 3.5 and low == pytest.approx(3.5 - half) and high == pytest.approx(3.5 + half)
    assert np.isnan(interval([2.0])[1]) and interval([2.0])[0] == 2.0
    runs = pd.Index(["r0", "r1", "r2"])
    a = pd.DataFrame({"x": [3, 3.1, 2.9], "y": [2, 2.2, 1.9], "z": [1, 0.8, 1.1]}, index=runs)
    agree = rank_agreement(a, a * 10 + 1)
    assert agree["rho"] == 1.0 and agree["low"] == 1.0 and agree["items"] == 3 and agree["runs"] == 3
    assert rank_agreement(a, -a)["rho"] == -1.0
    assert np.isnan(rank_agreement(a[["x", "y"]], a[["x", "y"]])["rho"])  # two items: no ranking to test
    s = pd.Series({"a": 3.0, "b": 1.0, "c": 2.0})
    assert top_k_hit(s, {"a", "c"}) and not top_k_hit(s, {"a", "b"})
    assert auroc(s, {"a", "c"}) == 1.0 and auroc(s, {"b"}) == 0.0


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    return trained_cell(tmp_path_factory.mktemp("explain"), *CELL)


def _script(name, *args, timeout=600):
    return subprocess.run(
        [sys.executable, str(REPO / name), *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def _explain(*args, timeout=600):
    return _script("explain.py", *args, timeout=timeout)


def test_masking_nothing_changes_nothing_and_masking_a_relation_is_undone_after(cell):
    """The model meets several graphs in a row: a cache keyed on the wrong thing would carry one into the next."""
    from regnn.pipeline.explain import masked_rows
    from regnn.pipeline.predict import predicted

    p = predicted(
        OmegaConf.create(
            {"run": str(cell), "ensemble": True, "dataset_path": None, "device": "cpu", "check_scores": True}
        )
    )
    rows = masked_rows(p, [("item->n0", "n0->item"), ()], "auto")  # a planted relation masked, then nothing
    none = rows[rows.group == ""]
    assert len(none) == 2 * 2 and (none["drop"] == 0).all()  # 2 runs, 2 scores
    assert (rows[rows.group != ""]["drop"] > 0).any()


@pytest.mark.onepython
def test_explain_writes_the_report_and_regnn_explain_returns_its_tables(cell, tmp_path):
    import regnn

    r = _explain(f"run={cell}", f"hydra.run.dir={tmp_path / 'e'}")
    assert r.returncode == 0, r.stderr[-3000:]
    for f in ("explain.md", "explain.csv", "explain.png", "weights.csv", "agreement.csv"):
        assert (tmp_path / "e" / f).stat().st_size > 0
    table = pd.read_csv(tmp_path / "e" / "explain.csv")
    assert table.group.tolist() == [f"item->n{r} + n{r}->item" for r in range(4)]
    w = pd.read_csv(tmp_path / "e" / "weights.csv")
    assert set(w.layer) == {1, 2, 3, 4} and {"self:item", "item->n0"} <= set(w.relation) and (w.runs == 2).all()
    assert "Spearman's rho" in r.stderr and "| item->n0 + n0->item |" in (tmp_path / "e" / "explain.md").read_text()
    e = regnn.explain(cell)
    got = e.weights.set_index(["layer", "relation"])["mean"]
    assert np.allclose(got.loc[list(zip(w.layer, w.relation))].to_numpy(), w["mean"].to_numpy(), atol=1e-4)
    masked = e.ablation[(e.ablation.kind == "masked") & (e.ablation.score == "val_micro_f1")].set_index("group")
    assert np.allclose(masked["mean"].reindex(table.group).to_numpy(), table.masked_val_drop.to_numpy(), atol=1e-4)
    # never inside the run; a model without relation weights is refused in one line
    inside = _explain(f"run={cell}", f"hydra.run.dir={cell / 'x'}")
    assert inside.returncode == 2 and "inside the run's cell folder" in inside.stderr and not (cell / "x").exists()


@pytest.mark.onepython
def test_retrained_ablation_pairs_seeds_and_a_second_explain_trains_nothing(cell, tmp_path):
    args = [f"run={cell}", "ablation=retrain", f"retrain_dir={tmp_path / 'ab'}"]
    first = _explain(*args, f"hydra.run.dir={tmp_path / 'e1'}")
    assert first.returncode == 0, first.stderr[-3000:]
    cells = sorted(d.name for d in (tmp_path / "ab").iterdir())
    assert cells == [f"drop_item-n{r}_n{r}-item" for r in range(4)]
    one = json.loads((tmp_path / "ab" / cells[0] / "results.json").read_text())
    assert one["seeds"] == json.loads((cell / "results.json").read_text())["seeds"]  # the same seeds
    assert "item->n0" not in one["relation_names"] and "n0->item" not in one["relation_names"]
    table = pd.read_csv(tmp_path / "e1" / "explain.csv")
    assert table.epoch_s_without.notna().all()
    # each group's retrained drop is the cell's validation Micro-F1 minus its cell's without the group, seed by seed
    base = {r["seed"]: r["val_micro_f1"] for r in json.loads((cell / "results.json").read_text())["per_run"]}
    expected = []
    for c in cells:
        runs = json.loads((tmp_path / "ab" / c / "results.json").read_text())["per_run"]
        expected.append(sum(base[r["seed"]] - r["val_micro_f1"] for r in runs) / len(runs))
    assert sorted(table.retrain_val_drop) == pytest.approx(sorted(expected), abs=1e-4)  # the csv keeps 4 decimals
    again = _explain(*args, f"hydra.run.dir={tmp_path / 'e2'}")
    assert again.returncode == 0 and again.stderr.count("already holds results; skipped (resume=true)") == 4
    assert pd.read_csv(tmp_path / "e2" / "explain.csv").equals(table)


@pytest.mark.onepython
def test_drop_relations_trains_without_them_and_a_bad_value_is_refused_before_torch(tmp_path):
    r = run_train(
        *CELL,
        "runs=1",
        "trainer.max_epochs=2",
        'dataset.drop_relations=["n2->item"]',
        f"hydra.run.dir={tmp_path / 'a'}",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    names = json.loads((tmp_path / "a" / "results.json").read_text())["relation_names"]
    assert "item->n2" not in names and "n2->item" not in names and "item->n1" in names
    bad = run_train(*CELL, "dataset.drop_relations=3", f"hydra.run.dir={tmp_path / 'b'}")
    assert bad.returncode == 2 and "dataset.drop_relations=3 is not valid: give a list of relation names" in bad.stderr
    unknown = run_train(*CELL, 'dataset.drop_relations=["item->n9"]', f"hydra.run.dir={tmp_path / 'c'}")
    assert unknown.returncode == 2 and "['item->n9'] is not a relation of this graph" in unknown.stderr


def test_planted_relations_carry_the_class_and_the_others_do_not():
    data = make_planted(num_items=300, relations=4, planted=2, noise=0.5, seed=3)
    y = data.labels.numpy()
    for r in range(4):
        u, v = (x.numpy() for x in data.graph.edges(etype=f"item->n{r}"))
        same = np.mean(y[u] == v % 3)  # node j of n<r> is of class j mod 3
        if f"item->n{r}" in planted_names(4, 2):
            assert same > 0.6  # half the links to its own class, a third of the random half too
        else:
            assert abs(same - 1 / 3) < 0.06
        assert len(u) == 300 * 6  # the same degree for every relation
    with pytest.raises(DataError, match="planted=5 must be between 1 and relations=4"):
        make_planted(relations=4, planted=5)


@pytest.mark.onepython
def test_each_nodes_reasons_name_a_planted_relation_where_it_is_right_and_gcn_shares_sum_to_one(cell, tmp_path):
    p = _script("predict.py", f"run={cell}", "explain=true", f"hydra.run.dir={tmp_path / 'p'}")
    assert p.returncode == 0, p.stderr[-3000:]
    df = pd.read_csv(tmp_path / "p" / "predictions.csv")
    shares = [c for c in df.columns if c.startswith("share_")]
    assert sorted(shares) == sorted([f"share_n{r}->item" for r in range(4)] + ["share_self:item"])  # into items
    assert np.allclose(df[shares].sum(axis=1), 1.0, atol=1e-5) and (df[shares] >= 0).all().all()
    right = df[df.label == df.predicted]
    planted = {f"item->n{r} + n{r}->item" for r in range(2)}
    assert right.top_relation.isin(planted).mean() > 0.8  # most correctly classified items rest on a planted one
    drops = [c for c in df.columns if c.startswith("drop_")]
    assert len(drops) == 4 and (df[drops].max(axis=1) == df.apply(lambda r: r[f"drop_{r.top_relation}"], axis=1)).all()
    import regnn

    frame = regnn.predict(cell, explain=True).predictions()
    assert np.allclose(frame[shares].to_numpy(), df[shares].to_numpy(), atol=1e-6)
    # an attention layer aggregates otherwise: no shares, but its reasons, asked of the model itself
    gat = tmp_path / "gat"
    trained = run_train("dataset=synthetic", "model=re_gat", "runs=1", "trainer.max_epochs=2", f"hydra.run.dir={gat}")
    assert trained.returncode == 0, trained.stderr[-2000:]
    r = _script("predict.py", f"run={gat}", "explain=true", f"hydra.run.dir={tmp_path / 'q'}")
    assert r.returncode == 0, r.stderr[-2000:]
    q = pd.read_csv(tmp_path / "q" / "predictions.csv")
    assert "top_relation" in q and not any(c.startswith("share_") for c in q.columns)


def test_a_missing_run_or_a_bad_ablation_is_one_line_and_leaves_no_folder(tmp_path, cell):
    for script in ("explain.py", "predict.py"):
        r = _script(script)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert (
            r.stderr.strip().splitlines()[-1]
            == "run= is required: give it on the command line (run=<folder>; --help lists every option)"
        )
    bad = _explain(f"run={cell}", "ablation=foo", f"hydra.run.dir={tmp_path / 'x'}")
    assert bad.returncode == 2 and "ablation='foo': use masked" in bad.stderr and not (tmp_path / "x").exists()


def explained(drops: dict[str, list[float]], rho: tuple[float, float, float], kind: str = "retrain"):
    """An Explained of three runs whose retrained (or masked) validation drops per group are `drops`, and whose
    weights' agreement with it is rho (value, low, high): the report's input without training anything."""
    from regnn.pipeline.explain import Explained

    runs = [f"run_{k:02d}" for k in range(len(next(iter(drops.values()))))]
    weights = pd.DataFrame(
        [
            {"run": r, "layer": 1, "relation": g, "source": "a", "destination": "b", "weight": 1.0 + i}
            for i, g in enumerate(drops)
            for r in runs
        ]
    )
    per = pd.DataFrame(
        [
            {"run": r, "group": g, "score": s, "drop": v}
            for g, vals in drops.items()
            for r, v in zip(runs, vals)
            for s in ("val_micro_f1", "test_micro_f1")
        ]
    )
    ablation = summarise(per, ["group", "score"], "drop").assign(kind=kind)
    agreement = pd.DataFrame(
        [
            {
                "quantity": "mean_weight",
                "kind": kind,
                "score": "val_micro_f1",
                "rho": rho[0],
                "low": rho[1],
                "high": rho[2],
            }
        ]
    )
    return Explained(
        [(g,) for g in drops], weights, ablation, agreement, {"weights": weights, kind: per}, Path("c"), [], {}
    )


def test_the_report_leads_with_three_way_verdicts_and_says_what_the_weights_are_worth():
    from regnn.evaluation.importance import agreement_verdict, runs_to_tell, verdict
    from regnn.reporting.explain import group_table, markdown

    assert verdict(1.5, 3.0, 1.0) == "matters" and verdict(-0.2, 0.8, 1.0) == "free"
    assert verdict(0.2, 3.0, 1.0) == "cannot tell" and verdict(float("nan"), float("nan"), 1.0) == "cannot tell"
    assert agreement_verdict(0.1, 0.9) == "agree" and agreement_verdict(-0.9, -0.2) == "disagree"
    assert agreement_verdict(-0.5, 1.0) == "cannot tell"
    assert runs_to_tell([2.0, 3.0, 2.5], 1.0) == 4 and runs_to_tell([0.0, 4.0, 2.0], 1.0) > 3
    drops = {"a": [5.0, 6.0, 5.5], "b": [0.1, 0.2, 0.0], "c": [0.0, 3.0, 1.5]}
    e = explained(drops, (0.5, -0.5, 1.0))
    head = markdown(e, group_table(e, {g: (g,) for g in drops}), "t", {}).split("| relation")[0]
    assert "**3 runs**, fewer than the 10" in head
    assert (
        "- a: **matters**" in head and "- b: **free**" in head and "- c: **cannot tell from these runs (about" in head
    )
    assert "as this ablation does cannot be told from these runs** (Spearman's rho 0.50 [-0.50, 1.00]" in head
    assert "**Whether the mean weights rank the groups" in head
    assert "The weights put c first, the ablation a" in head and "No group is free" not in head
    assert "test disagrees" not in head
    e.per_run["retrain"].loc[
        (e.per_run["retrain"].group == "b") & (e.per_run["retrain"].score == "test_micro_f1"), "drop"
    ] = 2.0
    e.ablation = summarise(e.per_run["retrain"], ["group", "score"], "drop").assign(kind="retrain")
    head = markdown(e, group_table(e, {g: (g,) for g in drops}), "t", {}).split("| relation")[0]
    assert "- b: **free**: 0.10 [-0.15, 0.35] points of validation Micro-F1 lost (but test loses 2.00" in head
    e = explained({"a": [5.0, 6.0, 5.5], "c": [3.0, 4.0, 3.5], "d": [2.0, 2.5, 3.0]}, (-1.0, -1.0, -0.5), "masked")
    head = markdown(e, group_table(e, {g: (g,) for g in "acd"}), "t", {}).split("| relation")[0]
    assert "masked only**" in head and "is not what a group costs" in head and "No group is free" in head
    assert "**The mean weights disagree with this ablation**" in head


def test_the_report_names_the_quantity_the_study_found_and_says_so_when_none_tracks(monkeypatch):
    from regnn.reporting import relation_signals
    from regnn.reporting.explain import group_table, markdown

    drops = {"a": [5.0, 6.0, 5.5], "b": [0.1, 0.2, 0.0], "c": [0.0, 3.0, 1.5]}
    e = explained(drops, (0.5, -0.5, 1.0))
    share = {"a": 0.6, "b": 0.1, "c": 0.3}
    e.per_run["signals"] = pd.DataFrame(
        [
            {"run": f"run_{k:02d}", "group": g, "quantity": "flow_share", "value": v}
            for g, v in share.items()
            for k in range(3)
        ]
    )
    row = {"quantity": "flow_share", "kind": "retrain", "score": "val_micro_f1", "rho": 1.0, "low": 0.5, "high": 1.0}
    e.agreement = pd.concat([e.agreement, pd.DataFrame([row])], ignore_index=True)
    found = {"best": "flow_share", "tracks": True, "mean_rho": 0.9, "per_graph": {"DBLP": [1.0, 0.5, 1.0]}}
    found["ranking"] = [{"quantity": q} for q in ("flow_share", "taylor", "mean_weight")]
    monkeypatch.setattr(relation_signals, "study", lambda: found)

    def report():
        return markdown(e, group_table(e, {g: (g,) for g in drops}), "t", {})

    text = report()
    head = text.split("| relation")[0]
    assert "(results/weight_study/study.md, every group retrained, Spearman's rho: DBLP 1.00) is flow_share" in head
    assert "On this cell flow_share ranks the groups as this ablation does (Spearman's rho 1.00 [0.50, 1.00])" in head
    assert "| flow_share (tracks the retrained ablation best) | mean weight" in text and "| a | 0.600 |" in text
    # a model whose layers do not give the best one (an attention model: no message shares) gets the next it has
    e.per_run["signals"] = e.per_run["signals"].assign(quantity="taylor")
    e.agreement = e.agreement.replace({"quantity": {"flow_share": "taylor"}})
    assert "the next best it has is taylor" in report() and "On this cell taylor ranks" in report()
    assert "| taylor (the study's closest this model has; it did not track on every graph) |" in report()
    # two groups: no rho, but which group the quantity and the ablation each put first
    two = explained({"a": [5.0, 6.0, 5.5], "b": [1.5, 2.0, 2.5]}, (float("nan"),) * 3)
    two.per_run["signals"] = e.per_run["signals"][e.per_run["signals"].group != "c"].replace({"a": "b", "b": "a"})
    text = markdown(two, group_table(two, {"a": ("a",), "b": ("b",)}), "t", {})
    assert (
        "cannot be ranked against the ablation (fewer than 3 relation groups, or a constant ranking); it puts b" in text
    )
    assert "it puts b first, the ablation a." in text
    monkeypatch.setattr(relation_signals, "study", lambda: found | {"tracks": False})
    head = report().split("| relation")[0]
    assert "**No quantity read off the weights tracked the retrained ablation on every graph studied**" in head
