"""What the tune's finalist stage buys: the search's best trial vs the finalists' choice vs the configured setting,
each scored afterwards on runs with seeds no tune saw, on small generated graphs.

    python scripts/checks/tune_protocol.py                  -> results/tune_protocol.{csv,md} (never written over)
    python scripts/checks/tune_protocol.py --quick --out /tmp/tp   (a smoke run: one graph, few trials)

For every graph and sampler seed, one tune (`train.py -m experiment=tune`, RE-GCN, tune.seeds search seeds per
trial, the study of --trials trials, its finalist stage with the largest --finalists and --finalist-seeds) runs
into <work>/<graph>_s<sampler seed>/. The smaller protocols are read off the same study: its first T trials are
what a T-trial tune with that sampler seed draws (the sampler is seeded and sequential), the best k finalists and
the first f finalist runs what tune.finalists=k, tune.finalist_seeds=f would train (finalists a smaller tune
needs and the large one did not train are trained here, as the tune trains them: regnn.tuning.train_finalist).
The choice is regnn.tuning's own (pick_finalists, choose).

Every setting a protocol picks, and the configured one (trial 0), is then trained --eval-runs times with seeds
2000, 2001, ... (none used by the search, the finalists or a tune's final runs) in <work>/.../eval_trial_<k>:
validation and test Micro-F1 over those runs are what the table compares. Test is only reported, never used to
pick or to choose a default. Everything resumes: the same command again keeps finished tunes and runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from regnn.paths import REPO_ROOT
from regnn.reporting.collect import markdown, refuse_existing
from regnn.tuning.study import open_study
from regnn.tuning import FINALIST_SEED_OFFSET, choose, pick_finalists, train_finalist

EVAL_SEED = 2000  # the scoring runs' first seed: apart from the search's (0, 1, ...) and the finalists' (1000, ...)
# generated graphs with small validation sets (val nodes: 240, 120, 60); the count graphs start from the settings
# dataset=custom starts from (conf/tuned/backbone/custom_gcn.yaml), as a user's own graph does
CUSTOM = ["dataset=counts", "dataset.feature_norm=standard", "tuned/backbone=custom_gcn"]
GRAPHS = {
    "counts": CUSTOM,
    "counts_400_seed1": [*CUSTOM, "dataset.num_items=400", "dataset.seed=1"],
    "synthetic": ["dataset=synthetic"],
}
COMMON = ["model=re_gcn", "trainer.max_epochs=100", "trainer.patience=30"]  # shortened alike, to fit 2 cores
HOW = {"threads": 1, "workers": 1, "device": "cpu"}


def tune(work: Path, graph: str, sampler_seed: int, a) -> Path:
    sweep = work / f"{graph}_s{sampler_seed}"
    cmd = [
        sys.executable,
        str(REPO_ROOT / "train.py"),
        "-m",
        "experiment=tune",
        *GRAPHS[graph],
        *COMMON,
        f"tune.trials={a.trials}",
        f"tune.seeds={a.seeds}",
        f"tune.finalists={max(a.finalists)}",
        f"tune.finalist_seeds={max(a.finalist_seeds)}",
        "tune.final_runs=0",
        "threads=1",
        "workers=1",
        f"hydra.sweeper.sampler.seed={sampler_seed}",
        f"hydra.sweep.dir={sweep}",
    ]
    print(" ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True, cwd=REPO_ROOT, stdout=subprocess.DEVNULL)
    return sweep


def run_vals(folder: Path, n: int) -> list[float]:
    """Validation Micro-F1 of runs 0..n-1 of a trained cell (NaN for a diverged run)."""
    out = []
    for i in range(n):
        rec = json.loads((folder / "runs" / f"run_{i:02d}" / "results.json").read_text())
        out.append(rec.get("val_micro_f1", math.nan))
    return out


def finalist_scores(sweep: Path, numbers: list[int], seeds: int, most: int) -> dict[int, dict]:
    """The finalists' scores over their first `seeds` runs (the tune trains `most`; missing ones trained here)."""
    out = {}
    for n in numbers:
        folder = sweep / f"finalist_trial_{n}"
        if not (folder / "results.json").is_file():
            train_finalist(OmegaConf.create(HOW), sweep, n, FINALIST_SEED_OFFSET, most)
        vals = run_vals(folder, seeds)
        ok = [v for v in vals if not math.isnan(v)]
        out[n] = {"mean": statistics.fmean(ok) if ok else None, "failed": len(vals) - len(ok)}
    return out


def evaluate(sweep: Path, number: int, runs: int) -> dict:
    folder = sweep / f"eval_trial_{number}"
    cfg = OmegaConf.load(sweep / f"trial_{number}" / "config.yaml")
    cfg.update({"seed": EVAL_SEED, "runs": runs, "resume": True, **HOW})
    from regnn.pipeline import train

    m = train(cfg, folder)["metrics"]
    return {"val": m["val_micro_f1"]["mean"], "val_std": m["val_micro_f1"]["std"], "test": m["test_micro_f1"]["mean"]}


def protocols(a) -> list[tuple[int, int, int]]:
    """(trials, finalists, finalist seeds) of every protocol compared; finalists 0: the search's best."""
    trials = sorted({t for t in a.prefixes if t <= a.trials} | {a.trials})
    return [(t, 0, 0) for t in trials] + [
        (t, k, f) for t, k, f in itertools.product(trials, sorted(a.finalists), sorted(a.finalist_seeds))
    ]


def measure(sweep: Path, graph: str, sampler_seed: int, a) -> list[dict]:
    study = open_study(f"sqlite:///{sweep / 'study.db'}", study_name(graph))
    done = {t.number: t.value for t in study.trials if t.state.name == "COMPLETE"}
    val_nodes = validation_nodes(sweep)
    default = evaluate(sweep, 0, a.eval_runs)
    rows = []
    for trials, k, f in protocols(a):
        scores = {n: v for n, v in done.items() if n < trials}
        if k == 0:
            pick, spent = min(scores, key=lambda n: (-scores[n], n)), trials * a.seeds
        else:
            numbers = pick_finalists(scores, k)
            pick = choose(finalist_scores(sweep, numbers, f, max(a.finalist_seeds)))
            spent = trials * a.seeds + len(numbers) * f
        e = evaluate(sweep, pick, a.eval_runs)
        rows.append(
            {
                "graph": graph,
                "val_nodes": val_nodes,
                "sampler_seed": sampler_seed,
                "trials": trials,
                "seeds": a.seeds,
                "finalists": k,
                "finalist_seeds": f,
                "runs_spent": spent,
                "trial": pick,
                "search_score": scores[pick],
                "eval_val": e["val"],
                "eval_val_std": e["val_std"],
                "eval_test": e["test"],
                "default_eval_val": default["val"],
                "default_eval_test": default["test"],
                "val_vs_default": e["val"] - default["val"],
                "test_vs_default": e["test"] - default["test"],
            }
        )
    return rows


def validation_nodes(sweep: Path) -> int:
    from regnn.data import load_dataset

    data = OmegaConf.to_container(OmegaConf.load(sweep / "trial_0" / "config.yaml").dataset)
    data.pop("metapaths", None)
    return len(load_dataset(**data).splits["val"])


def study_name(graph: str) -> str:
    return f"{'counts' if graph.startswith('counts') else graph}_re_gcn"


def summary(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby(["trials", "finalists", "finalist_seeds"], sort=True)
    out = g.agg(
        runs_spent=("runs_spent", "mean"),
        val_vs_default=("val_vs_default", "mean"),
        worst_val_vs_default=("val_vs_default", "min"),
        below_default=("val_vs_default", lambda s: int((s < -1e-9).sum())),
        picked_default=("trial", lambda s: int((s == 0).sum())),
        test_vs_default=("test_vs_default", "mean"),
        cases=("trial", "size"),
    ).reset_index()
    out.insert(
        0,
        "protocol",
        [
            f"{t} trials, search's best" if k == 0 else f"{t} trials, {k} finalists x {f} seeds"
            for t, k, f in zip(out.trials, out.finalists, out.finalist_seeds)
        ],
    )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=list(GRAPHS), choices=list(GRAPHS))
    ap.add_argument("--sampler-seeds", nargs="+", type=int, default=[0, 1])
    ap.add_argument("--trials", type=int, default=16, help="trials of each study (the largest protocol)")
    ap.add_argument("--prefixes", nargs="+", type=int, default=[8], help="smaller trial counts read off the study")
    ap.add_argument("--seeds", type=int, default=2, help="search seeds per trial (tune.seeds)")
    ap.add_argument("--finalists", nargs="+", type=int, default=[1, 3])
    ap.add_argument("--finalist-seeds", nargs="+", type=int, default=[3, 5])
    ap.add_argument("--eval-runs", type=int, default=6)
    ap.add_argument("--work", default=str(REPO_ROOT / "outputs" / "tune_protocol"))
    ap.add_argument("--out", default=str(REPO_ROOT / "results" / "tune_protocol"))
    ap.add_argument("--quick", action="store_true", help="one graph, 6 trials, 2 eval runs (a smoke run)")
    a = ap.parse_args(argv)
    if a.quick:
        a.graphs, a.sampler_seeds, a.trials, a.prefixes, a.finalists, a.finalist_seeds, a.eval_runs = (
            ["synthetic"],
            [0],
            6,
            [3],
            [2],
            [2],
            2,
        )
    if min(a.finalists) < 1 or min(a.finalist_seeds) < 1:
        ap.error("--finalists and --finalist-seeds: whole numbers >= 1 (the search's best is always compared)")
    error = refuse_existing(a.out)
    if error:
        print(error)
        return 1
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    work = Path(a.work)
    rows = []
    for graph, s in itertools.product(a.graphs, a.sampler_seeds):
        rows += measure(tune(work, graph, s, a), graph, s, a)
    df = pd.DataFrame(rows)
    summ = summary(df)
    out = Path(a.out)
    shown = summ.drop(columns=["trials", "finalists", "finalist_seeds"])
    for col in ("val_vs_default", "worst_val_vs_default", "test_vs_default"):
        shown[col] = summ[col].map(lambda v: f"{v:+.2f}")
    shown["runs_spent"] = summ.runs_spent.map(lambda v: f"{v:.0f}")
    cases = ", ".join(f"{g} ({int(df[df.graph == g].val_nodes.iloc[0])} validation nodes)" for g in a.graphs)
    notes = [
        f"RE-GCN, experiment=tune on {cases}, each with sampler seeds {', '.join(map(str, a.sampler_seeds))} "
        f"({len(a.graphs) * len(a.sampler_seeds)} cases per protocol); {a.seeds} search seeds per trial; "
        f"training shortened to {COMMON[1]}, {COMMON[2]} (scripts/checks/tune_protocol.py).",
        f"Every pick and the configured setting (trial 0) scored on {a.eval_runs} runs with seeds {EVAL_SEED}-"
        f"{EVAL_SEED + a.eval_runs - 1}, which no tune saw: val_vs_default is the pick's mean validation "
        "Micro-F1 minus the configured setting's (mean over the cases, and the worst case), below_default counts "
        "the cases where the pick scored below it, picked_default those where the configured setting was "
        "chosen; test_vs_default is listed, never used to choose.",
        "runs_spent: training runs of the search and the finalist stage per tune.",
        "Per case: tune_protocol.csv.",
    ]
    error = refuse_existing(out)  # checked again: a run of this script beside another must not write over it
    if error:
        print(error)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(f"{out}.csv", index=False, float_format="%.4f")
    lines = ["# Tuning protocols on small validation sets", "", markdown(shown), ""] + [f"- {n}" for n in notes]
    Path(f"{out}.md").write_text("\n".join(lines) + "\n")
    print(Path(f"{out}.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
