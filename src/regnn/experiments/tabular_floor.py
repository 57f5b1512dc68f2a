"""The tabular floor of a graph of your own: the same encoded columns without the graph, so a user can see what the
relations add (docs/relational_example.md).

    python -m regnn.experiments.tabular_floor data/chinook/sql --out results/relational/floor

The graph is read by regnn's own reader (the same encoded columns, every encoder fitted on the training nodes only),
then two feature sets of the target's nodes:

- target: the target table's encoded columns;
- target + neighbours: those, and per relation leaving the target, the mean of the linked nodes' encoded columns
  and the number of linked nodes (a node with none: zeros), so a table one foreign key away is seen as columns.

Each feeds scikit-learn's LogisticRegression (columns scaled by their largest value, C chosen on validation) and
HistGradientBoostingClassifier (on the columns' 128 leading SVD components, leaves chosen on validation, no early
stopping), trained on the training split; the setting with the best validation Micro-F1 is scored on test. Both
fits are deterministic (lbfgs; SVD and boosting with a fixed random state), so one fit stands for every seed the
models train with; the table says so rather than repeat it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler

GRIDS = {
    "logistic regression": [{"C": c} for c in (0.1, 1.0, 10.0, 100.0)],
    "gradient boosting": [{"max_leaf_nodes": n} for n in (15, 31)],
}
# boosting 20 classes over thousands of TF-IDF columns takes longer than a floor should (over 9 minutes for one fit
# on one core): it sees the columns' leading components instead (truncated SVD fitted on the training rows)
COMPONENTS = 128


def dense(x) -> np.ndarray:
    return (x.to_dense() if x.is_sparse else x).double().numpy()


def neighbour_columns(ds) -> tuple[np.ndarray, list[str]]:
    """Per relation leaving the target type: the mean of the linked nodes' columns, and their number."""
    n = ds.graph.num_nodes(ds.target)
    blocks, names = [], []
    for src, rel, dst in ds.graph.canonical_etypes:
        if src != ds.target:
            continue
        u, v = (t.numpy() for t in ds.graph.edges(etype=(src, rel, dst)))
        x = dense(ds.features[dst])
        total, count = np.zeros((n, x.shape[1])), np.bincount(u, minlength=n).astype(float)
        np.add.at(total, u, x[v])
        blocks += [total / np.maximum(count, 1)[:, None], count[:, None]]
        names += [f"{rel}:{c}" for c in ds.feature_names.get(dst, [f"x{j}" for j in range(x.shape[1])])]
        names.append(f"{rel}:count")
    return (np.hstack(blocks) if blocks else np.zeros((n, 0))), names


def model(kind: str, setting: dict, width: int):
    if kind == "logistic regression":
        return make_pipeline(MaxAbsScaler(), LogisticRegression(max_iter=1000, **setting))
    return make_pipeline(
        MaxAbsScaler(),
        TruncatedSVD(min(COMPONENTS, width - 1), random_state=0),
        HistGradientBoostingClassifier(early_stopping=False, random_state=0, **setting),
    )


def fit_one(kind: str, x: np.ndarray, y: np.ndarray, idx: dict) -> dict:
    """The grid's settings on the training split, the one with the best validation Micro-F1 scored on test."""
    best, t0 = None, time.perf_counter()
    for setting in GRIDS[kind]:
        m = model(kind, setting, x.shape[1]).fit(x[idx["train"]], y[idx["train"]])
        val = f1_score(y[idx["val"]], m.predict(x[idx["val"]]), average="micro")
        if best is None or val > best[0]:
            best = (val, setting, m)
        print(f"{kind} {setting}: val Micro-F1 {100 * val:.2f} ({time.perf_counter() - t0:.0f}s)", flush=True)
    val, setting, m = best
    pred = m.predict(x[idx["test"]])
    return {
        "val_micro_f1": 100 * val,
        "test_micro_f1": 100 * f1_score(y[idx["test"]], pred, average="micro"),
        "test_macro_f1": 100 * f1_score(y[idx["test"]], pred, average="macro"),
        "setting": json.dumps(setting, sort_keys=True),
        "seconds": time.perf_counter() - t0,
    }


def floors(path: str | Path) -> tuple[str, list[dict]]:
    """(the graph's name, a row per column set and model)."""
    from regnn.data.custom import load_custom

    ds = load_custom(path)
    y = ds.labels.numpy()
    idx = {s: m.numpy() for s, m in ds.splits.items()}  # node positions per split
    own = dense(ds.features[ds.target])
    near, _ = neighbour_columns(ds)
    rows = []
    for columns, x in (("target", own), ("target + neighbours", np.hstack([own, near]))):
        for kind in GRIDS:
            rows.append({"columns": columns, "model": kind, "width": x.shape[1], **fit_one(kind, x, y, idx)})
    return ds.name, rows


def render(rows: list[dict], graph: str) -> str:
    lines = [
        f"# Tabular floor on {graph}",
        "",
        "The same encoded columns without the graph: scikit-learn on the target's columns, then on those and the mean "
        "of each directly linked table's columns per relation. The setting with the best validation Micro-F1 is "
        "scored on test; both fits are deterministic, so one fit stands for every seed.",
        "",
        "| columns | model | width | val Micro-F1 | test Micro-F1 | test Macro-F1 | setting | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['columns']} | {r['model']} | {r['width']} | {r['val_micro_f1']:.2f} | {r['test_micro_f1']:.2f} | "
            f"{r['test_macro_f1']:.2f} | `{r['setting']}` | {r['seconds']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="the graph's description (dataset.yaml) or its folder")
    ap.add_argument("--out", type=Path, required=True, help="writes OUT.csv and OUT.md")
    a = ap.parse_args()
    graph, rows = floors(a.path)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(a.out.with_suffix(".csv"), index=False, float_format="%.4f")
    text = render(rows, graph)
    a.out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
