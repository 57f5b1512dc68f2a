"""Do the defaults train on a graph nobody tuned for? Every model, 10 seeds, through `dataset=custom`.

A generated graph is written in the npz format of docs/custom_data.md and trained exactly as a user's graph is:
`dataset=custom dataset.path=...` with nothing but the defaults (and the meta-paths HAN needs, which only a user can
name). The graphs (--generator): `counts` (regnn.data.synthetic.CountGraph: raw-count item features, weakly informative
links, two feature-less types) and `bow` (regnn.data.synthetic.BowGraph: wide binary bag-of-words on the papers, word
counts on authors and subjects, and the words themselves as a feature-less type linked to every paper using them) and `ids`
(regnn.data.synthetic.IdGraph: no features on any type, the neighbour types several times larger than the target,
few labels).
Per model: mean ± std of test and validation Micro-F1 over the seeds, the lowest test score, the chance level
(the share of the largest class among the test nodes) and the runs at chance (test Micro-F1 within
AT_CHANCE points of it). Writes <out>.json (every run's scores) and <out>.md; refuses to overwrite them.

    python scripts/checks/defaults_check.py                       # results/defaults_check.{json,md}
    python scripts/checks/defaults_check.py --generator bow --out results/defaults_check_bow --work outputs/defaults_check_bow
    python scripts/checks/defaults_check.py --models re_gat --runs 3 --out /tmp/check --set model.attn_dropout=0.2
"""  # noqa: E501  (usage lines kept whole, to be copied as they are)

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from regnn.data.synthetic import BowGraph, CountGraph, IdGraph
from regnn.data.custom import save_npz as export_npz
from regnn.evaluation.metrics import AT_CHANCE

REPO = Path(__file__).resolve().parents[2]


# model name -> extra overrides (the trainer for the mini-batch row)
# mlp and gcn for reference: what the features alone give, and plain message passing without relation types
MODELS = {
    "re_gat": [],
    "gat": [],
    "simple_hgn": [],
    "rgcn": [],
    "hgt": [],
    "han": [],
    "re_gcn": [],
    "re_gcn_minibatch": ["model=re_gcn", "trainer=minibatch"],
    "mlp": [],
    "gcn": [],
}
# quoted: '>' is outside Hydra's unquoted override characters
METAPATHS = {
    "counts": "dataset.metapaths={IUI: ['item->user', 'user->item'], ITI: ['item->tag', 'tag->item']}",
    "bow": "dataset.metapaths={PAP: ['paper->author', 'author->paper'], PSP: ['paper->subject', 'subject->paper']}",
    "ids": "dataset.metapaths={MAM: ['movie->actor', 'actor->movie'], MDM: ['movie->director', 'director->movie']}",
}
BUILTIN = ("dblp", "acm", "imdb")  # --dataset: a built-in graph instead of a generated one
GENERATORS = {
    "counts": (CountGraph, "num_items=400,num_users=200,num_tags=30,seed=0"),
    "bow": (BowGraph, "seed=0"),
    "ids": (IdGraph, "seed=0"),
}


def chance_level(data) -> float:
    y = data.labels[data.splits["test"]].numpy()
    return 100.0 * np.bincount(y).max() / len(y)


def train(model: str, path: Path | str, runs: int, out: Path, extra: list[str], generator: str = "counts") -> dict:
    """path: the generated graph's dataset.yaml, or the name of a built-in dataset (trained with its own protocol
    and the candidate's overrides)."""
    args = MODELS[model] if model in MODELS else [f"model={model}"]
    if not any(a.startswith("model=") for a in args):
        args = [f"model={model}", *args]
    data = [f"dataset={path}"] if path in BUILTIN else ["dataset=custom", f"dataset.path={path}"]
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        *data,
        *args,
        f"runs={runs}",
        "threads=1",
        "workers=1",
        f"hydra.run.dir={out}",
        *extra,
    ]
    if model == "han" and path not in BUILTIN:
        cmd.append(METAPATHS[generator])
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{model}: train.py failed:\n{p.stderr[-3000:]}")
    return {"results": json.loads((out / "results.json").read_text()), "log": p.stderr}


def summarise(model: str, res: dict, chance: float) -> dict:
    per = res["per_run"]
    ok = [r for r in per if "failed" not in r]
    test = np.array([r["test_micro_f1"] for r in ok])
    val = np.array([r["val_micro_f1"] for r in ok])
    return {
        "model": model,
        "runs": len(per),
        "failed_runs": len(per) - len(ok),
        "test_micro_f1_mean": float(test.mean()),
        "test_micro_f1_std": float(test.std(ddof=1)) if len(ok) > 1 else 0.0,
        "val_micro_f1_mean": float(val.mean()),
        "val_micro_f1_std": float(val.std(ddof=1)) if len(ok) > 1 else 0.0,
        "test_micro_f1_min": float(test.min()),
        "chance": chance,
        "runs_at_chance": int((test <= chance + AT_CHANCE).sum()) + len(per) - len(ok),
        "train_loss_blowup_runs": int(res.get("train_loss_blowup_runs", 0)),
        # seconds per epoch (training step and evaluation), median over the runs: every model of a check is
        # trained on one thread, so their ratios compare costs on the same footing
        "epoch_time_s": float(np.median([r["epoch_time_s"] for r in ok])) if ok else None,
        "per_run": [
            {
                k: r.get(k)
                for k in (
                    "seed",
                    "test_micro_f1",
                    "val_micro_f1",
                    "best_epoch",
                    "epochs",
                    "failed",
                    "train_loss_blowup",
                    "epoch_time_s",
                )
            }
            for r in per
        ],
    }


def markdown(rows: list[dict], graph: dict, runs: int, extra: list[str]) -> str:
    builtin = graph["generator"] == "built-in"
    lines = [
        (
            f"# A built-in dataset with the settings given ({runs} seeds)"
            if builtin
            else f"# Defaults on a graph without tuned settings ({runs} seeds)"
        ),
        "",
        "`python scripts/checks/defaults_check.py` — "
        + (
            f"built-in dataset `{graph['kwargs']}` with its own settings"
            if builtin
            else f"generated graph `{graph['generator']}({graph['kwargs']})`, written as npz and trained with "
            "`dataset=custom` and the defaults"
        )
        + (f" plus `{' '.join(extra)}`" if extra else "")
        + f". Chance (largest test class): "
        f"{rows[0]['chance']:.2f}; a run is at chance when its test Micro-F1 is within {AT_CHANCE:g} of it.",
        "",
        "| model | test Micro-F1 | val Micro-F1 | min test | runs at chance | training-loss blow-ups | s/epoch |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sec = r.get("epoch_time_s")
        lines.append(
            f"| {r['model']} | {r['test_micro_f1_mean']:.2f} ± {r['test_micro_f1_std']:.2f} | "
            f"{r['val_micro_f1_mean']:.2f} ± {r['val_micro_f1_std']:.2f} | {r['test_micro_f1_min']:.2f} | "
            f"{r['runs_at_chance']} of {r['runs']} | {r['train_loss_blowup_runs']} | "
            + (f"{sec:.3f} |" if sec is not None else "- |")
        )
    lines.append("")
    lines.append("s/epoch: one training step and its evaluation on one thread, median over the runs.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--generator", default="counts", choices=list(GENERATORS))
    ap.add_argument(
        "--graph",
        help="the generator's keyword arguments (default: "
        + "; ".join(f"{k}: {v[1]}" for k, v in GENERATORS.items())
        + ")",
    )
    ap.add_argument(
        "--dataset",
        choices=BUILTIN,
        help="train on this built-in dataset (its own protocol) instead of a generated graph",
    )
    ap.add_argument("--set", action="append", default=[], help="an extra override for every model")
    ap.add_argument("--out", default=str(REPO / "results" / "defaults_check"))
    ap.add_argument("--work", default=str(REPO / "outputs" / "defaults_check"))
    ap.add_argument(
        "--collect",
        action="store_true",
        help="train nothing: summarise the models whose <work>/<model>/results.json is complete",
    )
    a = ap.parse_args(argv)
    out = Path(a.out)
    for f in (out.with_suffix(".json"), out.with_suffix(".md")):
        if f.exists():
            raise SystemExit(f"{f} exists; move it away or pass another --out (results are never overwritten)")
    work = Path(a.work)
    if a.dataset:
        from regnn.data import load_dataset

        data = load_dataset(a.dataset, dir=REPO / "data" / a.dataset.upper())
        path, graph = a.dataset, {"generator": "built-in", "kwargs": a.dataset}
    else:
        make, default_graph = GENERATORS[a.generator]
        a.graph = a.graph or default_graph
        kwargs = {k: (float(v) if "." in v else int(v)) for k, v in (kv.split("=") for kv in a.graph.split(","))}
        data = make(**kwargs).build()
        path = work / "graph" / "dataset.yaml" if a.collect else export_npz(data, work / "graph")
        graph = {"generator": f"regnn.data.synthetic.{make.__name__}", "kwargs": a.graph}
    chance = chance_level(data)
    rows = []
    for m in a.models.split(","):
        if a.collect:
            f = work / m / "results.json"
            if not f.exists():
                print(f"{m}: not trained (no {f})")
                continue
            rows.append(summarise(m, json.loads(f.read_text()), chance))
        else:
            rows.append(summarise(m, train(m, path, a.runs, work / m, a.set, a.generator)["results"], chance))
        r = rows[-1]
        print(
            f"{m}: test {r['test_micro_f1_mean']:.2f} ± {r['test_micro_f1_std']:.2f}, val "
            f"{r['val_micro_f1_mean']:.2f}, min {r['test_micro_f1_min']:.2f}, {r['runs_at_chance']} at chance",
            flush=True,
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(
        json.dumps(
            {
                "graph": graph,
                "runs": a.runs,
                "overrides": a.set,
                "models_requested": a.models.split(","),
                "at_chance_margin": AT_CHANCE,
                "models": rows,
            },
            indent=1,
        )
    )
    missing = [m for m in a.models.split(",") if m not in {r["model"] for r in rows}]
    note = f"\nNot trained (no complete results): {', '.join(missing)}.\n" if missing else ""
    out.with_suffix(".md").write_text(markdown(rows, graph, a.runs, a.set) + note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
