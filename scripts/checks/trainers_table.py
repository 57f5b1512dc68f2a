"""Full batch against mini-batch on the same graphs, seeds and model: does `trainer=minibatch` train what full batch
trains, and what does sampling cost?

    .venv/bin/python scripts/checks/trainers_table.py                     # 10 runs each -> results/trainers.{csv,md}
    .venv/bin/python scripts/checks/trainers_table.py --graphs acm synthetic --runs 3 --out outputs/trainers_try

For every graph and model, three cells are trained through train.py with every other setting at its default. The
graphs: the built-in DBLP, ACM and IMDB, and two generated graphs of different shapes written in the npz format and
trained as a user's graph is (`dataset=custom`, the custom defaults): `synthetic` (regnn.data.make_synthetic, every
type with features) and `counts` (regnn.data.make_count_graph: raw-count features, two feature-less types). The
cells:
- fullbatch: the full-batch trainer;
- sampled: `trainer=minibatch` with sampled fanouts (`trainer.fanouts=null`: trainer.default_fanout in every layer);
- every neighbour: `trainer=minibatch trainer.fanouts=null trainer.default_fanout=-1`.
The cells live in <work>/<graph>_<model>/<setting>/ (resume=true: finished cells are reused, a cell cut off is
continued, never overwritten). The table gives each setting's test and validation Micro-F1 (mean ± std over the
runs, the test score at the epoch each trainer's rule chose) and the mini-batch settings' difference from full
batch. It is written to <out>.csv and <out>.md, which are never overwritten.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from regnn.evaluation.metrics import mean_std  # population std, as every table here

REPO = Path(__file__).resolve().parents[2]

SETTINGS = {
    "fullbatch": [],
    "sampled": ["trainer=minibatch", "trainer.fanouts=null"],
    "every neighbour": ["trainer=minibatch", "trainer.fanouts=null", "trainer.default_fanout=-1"],
}


GENERATED = {"synthetic": "make_synthetic", "counts": "make_count_graph"}


def dataset_args(graph: str, work: Path) -> list[str]:
    """train.py's dataset overrides: a built-in dataset by name, a generated graph as the user's graph it stands for."""
    if graph not in GENERATED:
        return [f"dataset={graph}"]
    import regnn.data
    from regnn.data.custom import save_npz

    path = work / "graphs" / graph / "dataset.yaml"
    if not path.exists():  # written once: its fingerprint then stays that of the cells trained on it
        save_npz(getattr(regnn.data, GENERATED[graph])(), path.parent)
    return ["dataset=custom", f"dataset.path={path}"]


def train(graph: str, model: str, setting: str, runs: int, work: Path, extra: list[str]) -> dict:
    out = work / f"{graph}_{model}" / setting.replace(" ", "_")
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        *dataset_args(graph, work),
        f"model={model}",
        f"runs={runs}",
        "resume=true",
        "save_model=false",
        *SETTINGS[setting],
        *extra,
        f"hydra.run.dir={out}",
    ]
    print("trainers_table:", " ".join(cmd[2:]), flush=True)
    if subprocess.run(cmd, cwd=REPO).returncode != 0:
        raise SystemExit(f"trainers_table: {graph} {model} {setting} failed (its log: {out}/train.log)")
    res = json.loads((out / "results.json").read_text())
    res["config"] = yaml.safe_load((out / "config.yaml").read_text())
    return res


def row(graph: str, model: str, setting: str, res: dict, full: dict | None) -> dict:
    per = [r for r in res["per_run"] if "failed" not in r]
    test = mean_std([r["test_micro_f1"] for r in per])
    val = mean_std([r["val_micro_f1"] for r in per])
    t, layers = res["config"]["trainer"], res["config"]["model"].get("num_layers")
    fanouts = t.get("fanouts") or ([t["default_fanout"]] * layers if "default_fanout" in t else [])
    return {
        "graph": graph,
        "model": model,
        "setting": setting,
        "runs": len(per),
        "fanouts": " ".join(map(str, fanouts)),
        "stop_on": ",".join(t.get("stop_on", [])),
        "test_micro_f1": test["mean"],
        "test_std": test["std"],
        "val_micro_f1": val["mean"],
        "val_std": val["std"],
        "test_diff": None if full is None else test["mean"] - full["test_micro_f1"],
        "val_diff": None if full is None else val["mean"] - full["val_micro_f1"],
        "epochs": mean_std([r["epochs"] for r in per])["mean"],
    }


def markdown(df: pd.DataFrame, runs: int) -> str:
    f = lambda m, s: f"{m:.2f} ± {s:.2f}"  # noqa: E731
    d = lambda x: "" if pd.isna(x) else f"{x:+.2f}"  # noqa: E731
    lines = [
        "# Full batch against mini-batch",
        "",
        f"`python scripts/checks/trainers_table.py`: {runs} runs per cell (seeds 0-{runs - 1}), every setting at "
        "its default but the trainer. Test Micro-F1 at the epoch each trainer's stopping rule chose; the "
        "differences are from the full-batch cell of the same graph and model.",
        "",
        "| graph | model | trainer | fanouts | stop on | test Micro-F1 | difference | validation Micro-F1 | "
        "difference | epochs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.graph} | {r.model} | {r.setting} | {r.fanouts or '-'} | {r.stop_on} | "
            f"{f(r.test_micro_f1, r.test_std)} | {d(r.test_diff)} | "
            f"{f(r.val_micro_f1, r.val_std)} | {d(r.val_diff)} | {r.epochs:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=["dblp", "acm", "imdb", *GENERATED])
    ap.add_argument("--models", nargs="+", default=["re_gcn"])
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--work", type=Path, default=REPO / "outputs" / "trainers_table")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "trainers")
    ap.add_argument("overrides", nargs="*", help="more train.py overrides for every cell")
    a = ap.parse_args(argv)
    for f in (a.out.with_suffix(".csv"), a.out.with_suffix(".md")):
        if f.exists():
            raise SystemExit(f"{f} exists; move it away or pass another --out (results are never overwritten)")
    rows = []
    for graph in a.graphs:
        for model in a.models:
            full = None
            for setting in a.settings:
                res = train(graph, model, setting, a.runs, a.work, a.overrides)
                r = row(graph, model, setting, res, full)
                if setting == "fullbatch":
                    full = r
                rows.append(r)
    df = pd.DataFrame(rows)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(a.out.with_suffix(".csv"), index=False, float_format="%.4f")
    a.out.with_suffix(".md").write_text(markdown(df, a.runs))
    print(markdown(df, a.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
