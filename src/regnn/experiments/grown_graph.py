"""Predictions for a graph that grew, without retraining: how well a model trained on part of a graph classifies
the nodes it never saw, beside a model retrained on the whole graph.

For DBLP, ACM and IMDB (written as a user's graph, format: pyg, with an id per node) two graphs are held out:

- target: 20% of the test target nodes with their edges; the model trained without them predicts the full graph
  (predict.py's changed_graph=true) and is scored on them ("new nodes"), and on the test nodes it knew;
- id-only: 20% of a type without features of its own (DBLP's venues, ACM's authors, IMDB's directors made
  id-only), each new one given the type's mean learned vector; scored on the test nodes whose receptive field (the
  model's layers, in hops) holds a new node, and on the others.

Beside each: the model trained on the full graph (the same settings, dataset=custom's defaults), scored on the
same nodes ("retrained") and on every test node ("transductive"). Test Micro-F1, mean ± std over the runs.

    python -m regnn.experiments.grown_graph [--datasets dblp acm imdb] [--runs 10] [--out results/grown_graph]

Cells live under outputs/grown_graph/ and are resumed: the same command again trains only what is missing.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from regnn.paths import REPO_ROOT
from regnn.reporting.common import write_study

HELD_OUT = 0.2
ID_ONLY = {"dblp": "venue", "acm": "author", "imdb": "director"}  # the id-only type held out per dataset
log = logging.getLogger("regnn")


def with_ids(d, id_only: str):
    """d with an id per node ("<type><position>") and `id_only` without features of its own."""
    from regnn.data.features import one_hot_ids

    d.node_ids = {t: np.array([f"{t}{i}" for i in range(d.graph.num_nodes(t))]) for t in d.graph.ntypes}
    d.features[id_only] = one_hot_ids(d.graph.num_nodes(id_only))
    return d


def pyg_dict(d, keep: dict[str, np.ndarray] | None = None) -> dict:
    """d as HeteroData.to_dict() holds it (node_id per type, every relation as stored), with only the nodes
    `keep` lists per type (all by default) and the edges between them."""
    from regnn.data.scaling import is_placeholder

    g, out = d.graph, {"_global_store": {}}
    keep = {t: keep.get(t, np.arange(g.num_nodes(t))) if keep else np.arange(g.num_nodes(t)) for t in g.ntypes}
    new = {}
    for t in g.ntypes:
        new[t] = np.full(g.num_nodes(t), -1)
        new[t][keep[t]] = np.arange(len(keep[t]))
        store = {"node_id": [str(x) for x in d.node_ids[t][keep[t]]]}
        x = d.features[t]
        if is_placeholder(x) and x.is_sparse:
            store["num_nodes"] = len(keep[t])
        else:
            x = x.index_select(0, torch.from_numpy(keep[t]))
            store["x"] = x.coalesce() if x.is_sparse else x
        out[t] = store
    tgt = out[d.target]
    idx = torch.from_numpy(keep[d.target])
    tgt["y"] = torch.from_numpy(d.known_labels())[idx]
    for s in ("train", "val", "test"):
        m = torch.zeros(g.num_nodes(d.target), dtype=torch.bool)
        m[d.splits[s]] = True
        tgt[f"{s}_mask"] = m[idx]
    for s, r, t in g.canonical_etypes:
        u, v = (e.numpy() for e in g.edges(etype=(s, r, t)))
        u, v = new[s][u], new[t][v]
        ok = (u >= 0) & (v >= 0)
        out[(s, r, t)] = {"edge_index": torch.from_numpy(np.stack([u[ok], v[ok]]))}
    return out


def write_graph(d, folder: Path, keep=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "graph.pt").exists():
        torch.save(pyg_dict(d, keep), folder / "graph.pt")
        meta = {"format": "pyg", "graph": "graph.pt", "target": d.target, "reverse": "keep"}
        (folder / "dataset.yaml").write_text(yaml.safe_dump(meta))
    return folder


def held_out(d, ntype: str, seed: int = 0) -> np.ndarray:
    """20% of the test target nodes (ntype = the target), or of ntype's nodes, by position."""
    rng = np.random.default_rng(seed)
    pool = d.splits["test"].numpy() if ntype == d.target else np.arange(d.graph.num_nodes(ntype))
    return np.sort(rng.choice(pool, int(round(HELD_OUT * len(pool))), replace=False))


def train_cell(graph: Path, cell: Path, runs: int) -> Path:
    import regnn

    regnn.run(
        [
            "dataset=custom",
            f"dataset.path={graph}",
            "model=re_gcn",
            f"runs={runs}",
            "resume=true",
            "progress=false",
            "threads=1",
            "workers=1",
        ],
        run_dir=cell,
    )
    return cell


def micro_f1(df: pd.DataFrame, nodes) -> float:
    rows = df.loc[list(nodes)]
    return 100.0 * float((rows.label.astype(str) == rows.predicted.astype(str)).mean())


def per_run(cell: Path, full: Path, changed: bool) -> list[pd.DataFrame]:
    """Each run's predictions.csv on the full graph (indexed by node id)."""
    import regnn

    out = []
    for run in sorted((cell / "runs").glob("run_*")):
        p = regnn.predict(run, dataset_path=str(full), changed_graph=changed, device="cpu")
        out.append(p.predictions())
    return out


def study(name: str, runs: int, work: Path) -> list[dict]:
    from regnn.data import load_dataset

    d = with_ids(load_dataset(name, dir=REPO_ROOT / "data" / name.upper()), ID_ONLY[name])
    root = work / name
    full = write_graph(d, root / "graph_full")
    full_cell = train_cell(full, root / "cell_full", runs)
    full_preds = per_run(full_cell, full, changed=False)
    test = set(d.node_ids[d.target][d.splits["test"].numpy()])
    rows = []
    for scenario, ntype in (("target", d.target), ("id-only", ID_ONLY[name])):
        out = held_out(d, ntype)
        keep = {ntype: np.setdiff1d(np.arange(d.graph.num_nodes(ntype)), out)}
        part = write_graph(d, root / f"graph_without_{scenario}", keep)
        cell = train_cell(part, root / f"cell_without_{scenario}", runs)
        preds = per_run(cell, full, changed=True)
        if scenario == "target":
            new = set(d.node_ids[ntype][out])
            groups = {"new": sorted(new), "known": sorted(test - new)}
        else:  # the test nodes whose receptive field holds a node the model never saw
            with_new = set(preds[0].index[preds[0].new_in_reach]) & test
            groups = {"new": sorted(with_new), "known": sorted(test - with_new)}
        for what, nodes in groups.items():
            scores = {
                "inductive": [micro_f1(p, nodes) for p in preds],
                "retrained": [micro_f1(p, nodes) for p in full_preds],
            }
            row = {"dataset": name.upper(), "held out": f"{len(out)} {ntype}", "scenario": scenario}
            row |= {"nodes": "new" if what == "new" else "known", "count": len(nodes), "runs": len(preds)}
            for k, v in scores.items():
                row[f"{k}_mean"], row[f"{k}_std"] = float(np.mean(v)), float(np.std(v))
            row["transductive_mean"] = float(np.mean([micro_f1(p, sorted(test)) for p in full_preds]))
            row["transductive_std"] = float(np.std([micro_f1(p, sorted(test)) for p in full_preds]))
            rows.append(row)
            log.info("grown_graph: %s", row)
    return rows


def report(rows: list[dict]) -> str:
    lines = [
        "### Predictions for a graph that grew: test Micro-F1, mean ± std over the runs",
        "",
        "| dataset | held out | scored test nodes | count | trained without them, predicted on the full graph | "
        "retrained on the full graph, same nodes | retrained, every test node |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        what = {
            ("target", "new"): "the held-out nodes",
            ("target", "known"): "the other test nodes",
            ("id-only", "new"): "a held-out node in reach",
            ("id-only", "known"): "none in reach",
        }[(r["scenario"], r["nodes"])]
        lines.append(
            f"| {r['dataset']} | {r['held out']} | {what} | {r['count']} | {r['inductive_mean']:.2f} ± "
            f"{r['inductive_std']:.2f} | {r['retrained_mean']:.2f} ± {r['retrained_std']:.2f} | "
            f"{r['transductive_mean']:.2f} ± {r['transductive_std']:.2f} |"
        )
    lines += [
        "",
        f"- RE-GCN with dataset=custom's defaults, {rows[0]['runs'] if rows else 0} runs (seeds from 0) per cell; "
        "each graph written as a user's (format: pyg, an id per node).",
        "- Held out: 20% of the test target nodes with their edges, or 20% of a type without features of its own "
        "(ACM's authors, DBLP's venues; IMDB's directors made id-only), each new one predicted with the type's mean "
        "learned vector (docs/predict.md).",
        "- Made by `make grown-graph` (regnn.experiments.grown_graph).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["dblp", "acm", "imdb"])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--work", default=str(REPO_ROOT / "outputs" / "grown_graph"))
    ap.add_argument("--out", default=str(REPO_ROOT / "results" / "grown_graph"))
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%H:%M:%S")
    rows = [r for name in a.datasets for r in study(name, a.runs, Path(a.work))]
    write_study(a.out, rows, report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
