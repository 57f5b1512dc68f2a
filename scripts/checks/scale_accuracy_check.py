"""Does mini-batch training still learn at OGBN-MAG's shape? RE-GCN and RE-GAT on the 5%-scale generated graph, the
same command as every earlier measurement, against the last one committed.

    python scripts/checks/scale_accuracy_check.py                    # the check, appended to the report
    python scripts/checks/scale_accuracy_check.py --runs 1 --epochs 1 --report /tmp/x   # the script itself, tried

Each model trains through `python train.py dataset=ogbn_mag trainer=minibatch model=<m> dataset.dir=<data> runs=2
threads=2 trainer.max_epochs=3 trainer.patience=3` in outputs/scale_accuracy_check/<commit>_<model>/ (resume=true:
the same command again continues). The graph is generated once under --data-dir (regnn.data.ogb_format, seed 0,
the scale benchmark's). The labels are planted in the paper features, so this checks that training still learns
them, not a result. Within: |mean test accuracy - the last committed mean of that model| <= max(its std, --floor).
The report (<report>.json and .md, default results/scale_accuracy_check) keeps every earlier row and adds these.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def commit() -> str:
    p = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True, text=True)
    return p.stdout.strip() or "unknown"


def train(model: str, data_dir: Path, work: Path, a) -> dict:
    """Trains `model` (resumes a stopped one) and returns its row: seeds, test accuracies, best epochs."""
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        "dataset=ogbn_mag",
        "trainer=minibatch",
        f"model={model}",
        f"dataset.dir={data_dir}",
        f"runs={a.runs}",
        f"threads={a.threads}",
        f"trainer.max_epochs={a.epochs}",
        f"trainer.patience={a.epochs}",
        "resume=true",
        f"hydra.run.dir={work}",
    ]
    print(f"scale_accuracy_check: {model} -> {work}", file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=REPO, check=True)
    res = json.loads((work / "results.json").read_text())
    acc = [r["test_acc"] for r in res["per_run"]]
    return {
        "model": model,
        "runs": len(acc),
        "seeds": [r["seed"] for r in res["per_run"]],
        "test_acc": acc,
        "test_acc_mean": statistics.fmean(acc),
        "test_acc_std": statistics.pstdev(acc),
        "best_epochs": [r["best_epoch"] for r in res["per_run"]],
    }


def judge(row: dict, earlier: list[dict], floor: float) -> dict:
    """The row against the last earlier row of its model."""
    ref = [r for r in earlier if r["model"] == row["model"]]
    if not ref:
        return row | {"within": None}
    last = ref[-1]
    diff, tol = row["test_acc_mean"] - last["test_acc_mean"], max(last["test_acc_std"], floor)
    return row | {"against": last.get("commit"), "diff": diff, "tolerance": tol, "within": abs(diff) <= tol}


def markdown(report: dict) -> str:
    lines = [
        "# Mini-batch accuracy on the 5%-scale generated graph, code by code",
        "",
        f"`{report['command']}`, each code's commit named. The labels are planted in the paper features, so "
        "this checks that training still learns them, not a result. A new row is within when its mean is "
        "within max(the last earlier mean's std, "
        f"{report['floor']:g}) of that mean.",
        "",
        "| model | code | commit | runs | test accuracy per seed | mean ± std | difference | within |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        within = "" if r.get("within") is None else ("yes" if r["within"] else "no")
        diff = f"{r['diff']:+.2f}" if r.get("diff") is not None else ""
        lines.append(
            f"| {r['model']} | {r.get('code', '')} | {r.get('commit', '')} | {r['runs']} | "
            f"{', '.join(f'{x:.2f}' for x in r['test_acc'])} | {r['test_acc_mean']:.2f} ± "
            f"{r['test_acc_std']:.2f} | {diff} | {within} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["re_gcn", "re_gat"])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--floor", type=float, default=0.5, help="least tolerance, for rows of small spread")
    ap.add_argument("--data-dir", default=str(REPO / "outputs" / "scale_benchmark" / "data_scale0.05"))
    ap.add_argument("--work", default=str(REPO / "outputs" / "scale_accuracy_check"))
    ap.add_argument("--report", default=str(REPO / "results" / "scale_accuracy_check"))
    a = ap.parse_args(argv)
    data_dir, report_path = Path(a.data_dir), Path(a.report)
    if not (data_dir / "generated.json").is_file():
        from regnn.data.ogb_format import write_ogb_mag_like

        print(f"scale_accuracy_check: generating the 5%-scale graph under {data_dir}", file=sys.stderr)
        info = write_ogb_mag_like(data_dir, scale=0.05, seed=0) | {"scale": 0.05, "seed": 0}
        (data_dir / "generated.json").write_text(json.dumps(info, indent=2))
    old = json.loads(Path(f"{report_path}.json").read_text()) if Path(f"{report_path}.json").is_file() else {}
    earlier = old.get("rows", [])
    code = commit()
    rows = [
        judge(train(m, data_dir, Path(a.work) / f"{code}_{m}", a) | {"code": "now", "commit": code}, earlier, a.floor)
        for m in a.models
    ]
    command = (
        "python train.py dataset=ogbn_mag trainer=minibatch model=<m> dataset.dir=<the 5%-scale graph> "
        f"runs={a.runs} threads={a.threads} trainer.max_epochs={a.epochs} trainer.patience={a.epochs}"
    )
    report = {
        "what": "test accuracy of mini-batch RE-GCN and RE-GAT on the 5%-scale generated OGBN-MAG graph, code by code",
        "command": command,
        "floor": a.floor,
        "rows": earlier + rows,
    }
    report_path.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{report_path}.json").write_text(json.dumps(report, indent=2) + "\n")
    Path(f"{report_path}.md").write_text(markdown(report))
    for r in rows:
        print(
            f"scale_accuracy_check: {r['model']}: {r['test_acc_mean']:.2f} ± {r['test_acc_std']:.2f}"
            + (
                f", {r['diff']:+.2f} against {r['against']} (tolerance {r['tolerance']:.2f}): "
                f"{'within' if r['within'] else 'NOT within'}"
                if r.get("within") is not None
                else ""
            ),
            file=sys.stderr,
        )
    return 0 if all(r.get("within") is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
