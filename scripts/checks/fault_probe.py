"""Kill a training job at each write it makes, in turn, then re-run it: the cell must complete with every run
trained once and every JSON readable.

    .venv/bin/python scripts/checks/fault_probe.py                  # full-batch and mini-batch, synthetic graph, 3 runs
    .venv/bin/python scripts/checks/fault_probe.py --trainers fullbatch --runs 2

For each trainer, a clean job lists the writes (every summary, config and run record goes through
regnn.runs.io_safe.write_text). Then, for write k = 1..N, a fresh job is killed with SIGKILL in the middle of write k
(half of its temporary file written), and `train.py ... resume=true` is run in the same directory. Checked after
the re-run: it exits 0; every *.json under the directory parses; results.json lists runs 0..R-1 once each; the
re-run trained exactly the runs that had no finished record when the job was killed (none twice); and the scores
equal the clean job's. Writes results/fault_probe.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from regnn.runs.io_safe import write_json, write_text

REPO = Path(__file__).resolve().parents[2]

# runs train.py with the pipeline's writes and trainings logged to $PROBE_LOG; SIGKILL in write $PROBE_KILL
LAUNCHER = r"""
import os, runpy, signal, sys
from pathlib import Path
import regnn.runs.io_safe as io_safe
from regnn.pipeline.job import CellJob
log, kill_at, n = open(os.environ["PROBE_LOG"], "a"), int(os.environ.get("PROBE_KILL", "0")), [0]
write = io_safe.write_text
def probe_write(path, text):
    n[0] += 1
    log.write(f"write {Path(path).relative_to(os.environ['PROBE_DIR'])}\n"); log.flush()
    if n[0] == kill_at:
        Path(path).with_name(f".{Path(path).name}.{os.getpid()}.tmp").write_text(text[: len(text) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    write(path, text)
one = CellJob.train_one
def probe_one(self, run):
    log.write(f"train {run}\n"); log.flush()
    return one(self, run)
io_safe.write_text = probe_write  # the cell store writes through io_safe at call time
CellJob.train_one = probe_one  # either trainer's job
sys.argv = ["train.py", *sys.argv[1:]]
runpy.run_path("train.py", run_name="__main__")
"""

TRAINERS = {
    "fullbatch": ["trainer.max_epochs=8", "trainer.patience=8"],
    "minibatch": [
        "trainer=minibatch",
        "trainer.default_fanout=5",
        "trainer.batch_size=100",
        "trainer.max_epochs=3",
        "trainer.patience=3",
        "trainer.log_every=0",
    ],
}


def job(args: list[str], out: Path, log: Path, kill: int = 0) -> int:
    env = {**os.environ, "PROBE_LOG": str(log), "PROBE_KILL": str(kill), "PROBE_DIR": str(out), "HYDRA_FULL_ERROR": "0"}
    p = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *args, f"hydra.run.dir={out}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if kill == 0 and p.returncode != 0:
        print(p.stderr[-2000:], file=sys.stderr)
    return p.returncode


def events(log: Path, kind: str) -> list[str]:
    return (
        [line.split(" ", 1)[1] for line in log.read_text().splitlines() if line.startswith(kind + " ")]
        if log.exists()
        else []
    )


def scores(summary: dict) -> list:
    """The runs' records without what differs between processes (times, speed, the share of it sampling, memory,
    which process trained it)."""
    varies = ("seeds_per_s", "sampling_share", "peak_rss_gb", "pid", "host")
    return [{k: v for k, v in r.items() if "time" not in k and k not in varies} for r in summary["per_run"]]


def finished_runs(out: Path, runs: int) -> set[int]:
    done = set()
    for r in range(runs):
        try:
            json.loads((out / "runs" / f"run_{r:02d}" / "results.json").read_text())
            done.add(r)
        except (OSError, ValueError):
            pass
    return done


def unreadable_json(out: Path) -> list[str]:
    bad = []
    for p in out.rglob("*.json"):
        try:
            json.loads(p.read_text())
        except ValueError:
            bad.append(str(p.relative_to(out)))
    return bad


def probe(trainer: str, runs: int, work: Path) -> dict:
    args = ["dataset=synthetic", "model=re_gcn", f"runs={runs}", "threads=1", *TRAINERS[trainer]]
    clean_dir, clean_log = work / f"{trainer}_clean", work / f"{trainer}_clean.log"
    if job(args, clean_dir, clean_log) != 0:
        raise SystemExit(f"the clean {trainer} job failed")
    writes = events(clean_log, "write")
    clean = json.loads((clean_dir / "results.json").read_text())
    rows = []
    for k, name in enumerate(writes, 1):
        out, log1, log2 = work / f"{trainer}_kill{k}", work / f"{trainer}_kill{k}.log", work / f"{trainer}_re{k}.log"
        t0 = time.perf_counter()
        rc_killed = job(args, out, log1, kill=k)
        done = finished_runs(out, runs)
        rc_rerun = job([*args, "resume=true"], out, log2)
        retrained = sorted(int(r) for r in events(log2, "train"))
        summary = json.loads((out / "results.json").read_text()) if rc_rerun == 0 else {"per_run": []}
        row = {
            "write": k,
            "file": name,
            "killed_rc": rc_killed,
            "finished_before_kill": sorted(done),
            "rerun_rc": rc_rerun,
            "retrained": retrained,
            "each_run_once": [r["run"] for r in summary["per_run"]] == list(range(runs)),
            "no_finished_run_retrained": retrained == sorted(set(range(runs)) - done),
            "unreadable_json": unreadable_json(out),
            "scores_equal_clean_job": summary["per_run"] != [] and scores(summary) == scores(clean),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        row["ok"] = (
            rc_killed == -9
            and rc_rerun == 0
            and row["each_run_once"]
            and row["no_finished_run_retrained"]
            and not row["unreadable_json"]
            and row["scores_equal_clean_job"]
        )
        print(
            f"{trainer} write {k}/{len(writes)} ({name}): killed rc {rc_killed}, finished {sorted(done)}, "
            f"re-run rc {rc_rerun} retrained {retrained} -> {'ok' if row['ok'] else 'FAILED'}",
            flush=True,
        )
        rows.append(row)
    return {
        "trainer": trainer,
        "runs": runs,
        "arguments": args,
        "writes": writes,
        "kills": rows,
        "kills_ok": sum(r["ok"] for r in rows),
    }


def markdown(report: dict) -> str:
    lines = [
        "# Fault probe: a kill at every write of a training job, then a re-run",
        "",
        f"`{report['command']}` ({report['when']}). Each job was killed with SIGKILL in the middle of write k "
        "(half its temporary file written), then re-run with `resume=true` in the same directory.",
        "",
        "| trainer | write | file | finished before the kill | re-run trained | each run once | JSON readable "
        "| scores = clean job | ok |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in report["trainers"]:
        for r in t["kills"]:
            lines.append(
                f"| {t['trainer']} | {r['write']}/{len(t['writes'])} | `{r['file']}` | "
                f"{r['finished_before_kill']} | {r['retrained']} | {r['each_run_once']} | "
                f"{not r['unreadable_json']} | {r['scores_equal_clean_job']} | {'yes' if r['ok'] else 'NO'} |"
            )
    lines += ["", f"{report['kills_ok']} of {report['kills']} kills recovered correctly.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trainers", nargs="+", default=list(TRAINERS), choices=list(TRAINERS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "results" / "fault_probe"), help="writes <out>.json and <out>.md")
    a = ap.parse_args()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)  # before the minutes of probing, not after them
    with tempfile.TemporaryDirectory(prefix="fault_probe_") as work:
        trainers = [probe(t, a.runs, Path(work)) for t in a.trainers]
    report = {
        "command": "scripts/checks/fault_probe.py " + " ".join(sys.argv[1:]),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "trainers": trainers,
        "kills": sum(len(t["kills"]) for t in trainers),
        "kills_ok": sum(t["kills_ok"] for t in trainers),
    }
    write_json(f"{a.out}.json", report)
    write_text(f"{a.out}.md", markdown(report))
    print(f"{report['kills_ok']} of {report['kills']} kills recovered -> {a.out}.json, {a.out}.md")
    sys.exit(0 if report["kills_ok"] == report["kills"] else 1)


if __name__ == "__main__":
    main()
