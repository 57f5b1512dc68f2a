"""Which quantity read off a trained RE-GCN tracks what a relation group is worth? The ground truth is the retrained
ablation (every group retrained without it, on the cell's seeds, validation Micro-F1 lost, explain.py
ablation=retrain); the candidates are regnn.pipeline.relation_signals' (mean weight, the last layer's weights into
the target, last-layer and multi-layer message shares, the validation loss's derivatives) and, for comparison, the
masked ablation. Graphs: DBLP, ACM and IMDB with Table 2's settings, and two planted graphs (regnn.data.planted)
whose effects are set by construction: graded (relations planted for 31%, 15% and 5% of the items, two not at
all) and indirect (one relation planted two hops away, through a middle type, so it never touches the targets).

    python -m regnn.experiments.weight_study [--runs 10] [--graphs dblp acm imdb planted_graded planted_indirect]

Writes results/weight_study/: study.{csv,md} (per quantity and graph), groups.csv (the ground truth and every
quantity per group) and <graph>/ (explain.py's report of each graph's cell with its retrained ablation), and the
summary explain.py's report quotes (src/regnn/resources/relation_signals.json). Cells live under
outputs/weight_study/ and are resumed: the same command again trains only what is missing.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from regnn.evaluation.importance import agreement_verdict, interval
from regnn.paths import REPO_ROOT
from regnn.reporting.common import write_study
from regnn.runs.io_safe import write_text

_PLANTED = [
    "dataset=planted",
    "dataset.per_node=true",
    "dataset.noise=0.0",
    "dataset.degree=10",
    "dataset.signal=3",
    "dataset.num_items=3000",
    "model.num_layers=2",
    "trainer.max_epochs=1000",  # the two-hop path is learnt after 200-400 epochs
]
GRAPHS = {
    "dblp": ["dataset=dblp"],
    "acm": ["dataset=acm"],
    "imdb": ["dataset=imdb"],
    "planted_graded": [*_PLANTED, "dataset.relations=5", "dataset.planted=3", "dataset.shares=[0.31,0.15,0.05]"],
    "planted_indirect": [
        *(_PLANTED + ["dataset.relations=3", "dataset.planted=2", "dataset.through=[1]", "dataset.shares=[0.5,0.4]"])
    ],
}
RESOURCE = REPO_ROOT / "src" / "regnn" / "resources" / "relation_signals.json"
log = logging.getLogger("regnn")


def explained(name: str, runs: int, work: Path):
    """The graph's RE-GCN cell, trained, then explained with the retrained ablation (both resumed)."""
    from omegaconf import OmegaConf

    import regnn
    from regnn.pipeline import train
    from regnn.pipeline.explain import explain

    cell = work / name / "cell"
    settings = ["progress=false", "threads=1", "workers=2", "resume=true"]
    regnn.run(["model=re_gcn", *GRAPHS[name], f"runs={runs}", *settings], run_dir=cell)
    ecfg = {"run": str(cell), "ablation": "retrain", "retrain_dir": str(work / name / "ablation")}
    ecfg |= {"inference": "auto", "device": "cpu", "threads": 1, "check_scores": True, "allow_missing": False}
    return explain(OmegaConf.create(ecfg), train=train)


def graph_rows(name: str, e) -> tuple[list[dict], list[dict]]:
    """(one row per quantity: its agreement with the retrained ablation on validation; one row per group: the
    retrained drop and every quantity's mean)."""
    from regnn.pipeline.explain import agreement

    seeds = e.seeds
    signals = e.per_run["signals"]
    masked = e.per_run["masked"].rename(columns={"drop": "value"}).assign(quantity="masked_drop")
    masked = masked[masked.score == "val_micro_f1"][["run", "group", "quantity", "value"]]
    both = pd.concat([signals, masked], ignore_index=True)
    found = agreement(both, e.per_run["retrain"], "retrain", seeds, min_items=2)
    truth = e.per_run["retrain"].query("score == 'val_micro_f1'")
    top_truth = truth.groupby("group")["drop"].mean().idxmax()
    means = both.groupby(["quantity", "group"]).value.mean()
    rows = []
    for r in found:
        if r["score"] != "val_micro_f1":
            continue
        top = means[r["quantity"]].idxmax()
        rows.append(
            {"graph": name, "quantity": r["quantity"], "rho": r["rho"], "low": r["low"], "high": r["high"]}
            | {"verdict": agreement_verdict(r["low"], r["high"]), "top_agrees": top == top_truth}
            | {"groups": r["items"], "runs": r["runs"]}
        )
    groups = []
    for g, d in truth.groupby("group", sort=False):
        mean, low, high = interval(d["drop"].to_numpy())
        groups.append(
            {"graph": name, "group": g, "retrained_drop": mean, "low": low, "high": high}
            | {q: means[q].get(g, np.nan) for q in means.index.get_level_values(0).unique()}
        )
    return rows, groups


def best(table: pd.DataFrame, groups: pd.DataFrame) -> dict:
    """The weight-derived quantity (not the masked ablation) that tracks best: one whose rho interval is above 0
    on every graph, the highest mean rho among those; none tracks where no quantity's is (then the highest mean).
    Beside it, the masked ablation's mean rho and how far its drops were from the retrained ones (the ratio, over
    the groups whose retrained drop is above 1 point in its whole interval)."""
    weight = table[table.quantity != "masked_drop"]
    # a graph without an interval (no rho: a constant ranking) counts as not tracked there
    stats = weight.groupby("quantity").agg(mean_rho=("rho", "mean"), worst_low=("low", lambda v: v.min(skipna=False)))
    tracking = stats[stats.worst_low > 0]
    pick = (tracking if len(tracking) else stats).mean_rho.idxmax()
    per = weight[weight.quantity == pick].set_index("graph")
    stats = stats.assign(tracks=stats.worst_low > 0).sort_values(["tracks", "mean_rho"], ascending=False)
    return {
        "best": pick,
        "tracks": bool(len(tracking)),
        "mean_rho": float(stats.mean_rho[pick]),
        "per_graph": {g: [float(r.rho), float(r.low), float(r.high)] for g, r in per.iterrows()},
        "ranking": [
            {"quantity": q, "mean_rho": float(r.mean_rho), "worst_low": float(r.worst_low), "tracks": bool(r.tracks)}
            for q, r in stats.iterrows()
        ],
        "masked": _masked(table, groups),
        "study": "results/weight_study/study.md (make weight-study)",
    }


def _masked(table: pd.DataFrame, groups: pd.DataFrame) -> dict:
    clear = groups[groups.low > 1.0]
    ratio = clear.masked_drop / clear.retrained_drop
    return {
        "mean_rho": float(table[table.quantity == "masked_drop"].rho.mean()),
        "ratio": [float(ratio.min()), float(ratio.max())],
        "groups": len(clear),
    }


def _cell(r) -> str:
    if np.isnan(r.rho):
        return "–"
    return f"{r.rho:.2f} [{r.low:.2f}, {r.high:.2f}]" + ("" if r.top_agrees else " ✗")


def markdown(table: pd.DataFrame, groups: pd.DataFrame, pick: dict, runs: int) -> str:
    graphs = list(dict.fromkeys(table.graph))
    lines = [
        "# Which weight-derived quantity tracks the retrained ablation",
        "",
        (
            f"**{pick['best']}** tracks it best: its Spearman's rho with the retrained validation drops is above 0 "
            f"(its whole interval) on every graph, {pick['mean_rho']:.2f} on average."
            if pick["tracks"]
            else f"**No weight-derived quantity tracks it on every graph**; the closest, {pick['best']}, averages "
            f"rho {pick['mean_rho']:.2f} and its interval reaches 0 or below on some graph: read the retrained "
            "ablation."
        ),
        "",
        "| quantity | " + " | ".join(graphs) + " | mean rho |",
        "|---|" + "---|" * (len(graphs) + 1),
    ]
    for q, d in table.groupby("quantity", sort=False):
        d = d.set_index("graph")
        lines.append(f"| {q} | " + " | ".join(_cell(d.loc[g]) for g in graphs) + f" | {d.rho.mean():.2f} |")
    lines += ["", "## The ground truth: validation Micro-F1 lost, retrained without the group", ""]
    lines += ["| graph | group | retrained drop | " + " | ".join(dict.fromkeys(table.quantity)) + " |"]
    lines += ["|---|---|---|" + "---|" * table.quantity.nunique()]
    for _, r in groups.iterrows():
        vals = " | ".join(f"{r[q]:.3f}" for q in dict.fromkeys(table.quantity))
        lines.append(f"| {r.graph} | {r.group} | {r.retrained_drop:.2f} [{r.low:.2f}, {r.high:.2f}] | {vals} |")
    lines += [
        "",
        f"- RE-GCN, {runs} runs (seeds) per cell; every group retrained without it on the same seeds (explain.py "
        "ablation=retrain), each drop paired by seed. rho: Spearman's, between the quantity's mean per group and "
        "the mean retrained validation drop, with a 95% bootstrap interval over the runs; with two groups (IMDB) "
        "it is +1 or -1. ✗: the quantity puts another group first than the retrained ablation does.",
        "- Quantities (regnn.pipeline.relation_signals): mean_weight (the mean learned weight over layers and "
        "directions), last_into_target (the last layer's weights into the target type, 0 for a group that does "
        "not enter it), last_share and flow_share (each relation's share of the targets' aggregated messages in "
        "the last layer, or in every layer weighted by what flows on to the targets), taylor (-sum w dL/dw of the "
        "validation loss), gradient (sum |dL/dw|), masked_drop (the masked ablation, not weight-derived: "
        "for comparison).",
        "- Planted graphs: 3000 items, each item's class planted in one relation (graded: 31%, 15%, 5% of the "
        "items, two relations never; indirect: 50% directly, 40% two hops away through a middle type m1, so "
        "m1->n1 never touches an item), 10 links per relation, 2 layers, at most 1000 epochs.",
        "- Made by `make weight-study` (regnn.experiments.weight_study).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=list(GRAPHS), choices=list(GRAPHS))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--work", default=str(REPO_ROOT / "outputs" / "weight_study"))
    ap.add_argument("--out", default=str(REPO_ROOT / "results" / "weight_study"))
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    from regnn.pipeline.explain import group_of
    from regnn.reporting.explain import write
    from regnn.reporting.relation_signals import study

    rows, groups, cells, out = [], [], {}, Path(a.out)
    for k, name in enumerate(a.graphs, 1):
        log.info("weight study: %s (%d of %d)", name, k, len(a.graphs))
        cells[name] = explained(name, a.runs, Path(a.work))
        r, g = graph_rows(name, cells[name])
        rows, groups = rows + r, groups + g
    table, by_group = pd.DataFrame(rows), pd.DataFrame(groups)
    pick = best(table, by_group)
    out.mkdir(parents=True, exist_ok=True)
    write_study(out / "study", rows, markdown(table, by_group, pick, a.runs))
    write_text(out / "groups.csv", by_group.to_csv(index=False, float_format="%.4f"))
    if set(a.graphs) == set(GRAPHS):  # the report quotes the whole study only
        write_text(RESOURCE, json.dumps(pick, indent=1) + "\n")
        study.cache_clear()  # the reports below quote the summary just written
    for name, e in cells.items():  # each graph's report, quoting the study just written
        (out / name).mkdir(exist_ok=True)
        write(e, out / name, f"Relations of {name} (RE-GCN, retrained without each group)", group_of(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
