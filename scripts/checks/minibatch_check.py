"""Mini-batch RE-GCN against its full-batch cell: test and validation Micro-F1, side by side, from run folders.

Reads the results.json of one or more `train.py ... trainer=minibatch` run folders (their runs pooled, e.g. two
halves of the seeds trained side by side) and a committed full-batch cell (results/cells/<dataset>_<model>.json),
and writes <out>.json (every run) and <out>.md; refuses to overwrite them.

    python train.py dataset=dblp model=re_gcn trainer=minibatch hydra.run.dir=outputs/mb_dblp
    python scripts/checks/minibatch_check.py outputs/mb_dblp --cell results/cells/dblp_re_gcn.json --out results/minibatch_dblp
"""  # noqa: E501  (usage lines kept whole, to be copied as they are)

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

import yaml

from regnn.evaluation.metrics import mean_std  # population std, as every table here
from regnn.paths import repo_relative

REPO = Path(__file__).resolve().parents[2]


def runs_of(folders: list[Path]) -> tuple[list[dict], dict]:
    runs, config = [], None
    for f in folders:
        res = json.loads((f / "results.json").read_text())
        if res.get("trainer") != "minibatch":
            raise SystemExit(f"{f}: not a trainer=minibatch run (trainer={res.get('trainer')!r})")
        runs += [r for r in res["per_run"] if "failed" not in r]
        if config is None and (f / "config.yaml").exists():
            config = yaml.safe_load((f / "config.yaml").read_text())
    seeds = [r["seed"] for r in runs]
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"a seed appears twice among the runs: {sorted(seeds)}")
    return sorted(runs, key=lambda r: r["seed"]), config or {}


def cell_scores(path: Path) -> dict:
    doc = json.loads(path.read_text())
    per = [r for r in doc.get("results", doc)["per_run"] if "failed" not in r]  # a cell file or a results.json
    return {
        "test_micro_f1": mean_std([r["test_micro_f1"] for r in per]),
        "val_micro_f1": mean_std([r["val_micro_f1"] for r in per]),
        "source": repo_relative(path),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="trainer=minibatch run folders")
    ap.add_argument("--cell", required=True, type=Path, help="the full-batch cell (results/cells/<d>_<m>.json)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--title", default="Mini-batch RE-GCN against the full-batch cell")
    a = ap.parse_args(argv)
    for f in (a.out.with_suffix(".json"), a.out.with_suffix(".md")):
        if f.exists():
            raise SystemExit(f"{f} exists; move it away or pass another --out (results are never overwritten)")
    runs, config = runs_of(a.runs)
    mb = {k: mean_std([r[k] for r in runs]) for k in ("test_micro_f1", "test_macro_f1", "val_micro_f1")}
    full = cell_scores(a.cell.resolve())
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    import torch

    doc = {
        "runs_from": [str(p) for p in a.runs],
        "commit": commit,
        "model": config.get("model", {}),
        "trainer": config.get("trainer", {}),
        "environment": {"torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine()},
        "minibatch": mb,
        "fullbatch_cell": full,
        "per_run": [
            {k: r.get(k) for k in ("seed", "test_micro_f1", "test_macro_f1", "val_micro_f1", "best_epoch", "epochs")}
            for r in runs
        ],
    }
    m, t = doc["model"], doc["trainer"]
    setting = ", ".join(f"{k} {m[k]}" for k in ("layout", "hidden", "num_layers", "norm", "double_dropout") if k in m)
    setting += ", " + ", ".join(f"{k} {t[k]}" for k in ("fanouts", "batch_size", "stop_on") if k in t)
    f = lambda s: f"{s['mean']:.2f} ± {s['std']:.2f}"  # noqa: E731
    md = [
        f"# {a.title}",
        "",
        f"{len(runs)} runs (seeds {', '.join(str(r['seed']) for r in runs)}), commit {commit}, torch "
        f"{torch.__version__}, Python {platform.python_version()}. Settings: {setting}. Test scores at the epoch "
        "chosen by the trainer's rule (trainer.stop_on).",
        "",
        "| trainer | test Micro-F1 | test Macro-F1 | val Micro-F1 |",
        "|---|---|---|---|",
        f"| minibatch | {f(mb['test_micro_f1'])} | {f(mb['test_macro_f1'])} | {f(mb['val_micro_f1'])} |",
        f"| fullbatch ({full['source']}) | {f(full['test_micro_f1'])} | | {f(full['val_micro_f1'])} |",
        f"| difference | {mb['test_micro_f1']['mean'] - full['test_micro_f1']['mean']:+.2f} | | "
        f"{mb['val_micro_f1']['mean'] - full['val_micro_f1']['mean']:+.2f} |",
        "",
        f"Per run: {a.out.with_suffix('.json').name}.",
    ]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    a.out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md[4:8]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
