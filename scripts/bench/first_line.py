"""How long a refused command takes to say so, beside the time to import torch alone.

    python scripts/bench/first_line.py                 # 5 rounds; writes results/first_line.{json,md}
    python scripts/bench/first_line.py --rounds 9

train.py checks its config before it imports torch (tests/test_first_line.py holds that), so a typo or an
out-of-range value costs Hydra's composition, not torch's import. Each round runs every command once, in turn, so
that a change in the machine's load reaches all of them alike; each command's time is the median of its rounds'
wall times, from process start to exit (the refusal is its last line). The machine's load average is recorded
with the times: on a loaded machine every number grows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMANDS = {  # label -> arguments to python
    "train.py dataset=dblp model=re_gcm (unknown option)": ["train.py", "dataset=dblp", "model=re_gcm"],
    "train.py runs=0 (out-of-range value)": ["train.py", "runs=0"],
    "train.py --help": ["train.py", "--help"],
    'python -c "import torch"': ["-c", "import torch"],
}


def _time(args: list[str], run_dir: str) -> tuple[float, int]:
    extra = [f"hydra.run.dir={run_dir}"] if args[0] == "train.py" and args[1:] != ["--help"] else []
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *args, *extra], cwd=REPO, capture_output=True, text=True)
    return time.perf_counter() - t0, p.returncode


def measure(rounds: int) -> dict:
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    codes: dict[str, int] = {}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for label, args in COMMANDS.items():
                s, codes[label] = _time(args, str(Path(tmp) / "run"))
                times[label].append(round(s, 3))
            load.append(os.getloadavg()[0])
    return {
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "load_average_1min": {"min": min(load), "max": max(load)},
        "commands": {
            k: {"median_s": round(statistics.median(v), 3), "times_s": v, "exit_code": codes[k]}
            for k, v in times.items()
        },
    }


def markdown(r: dict) -> str:
    torch_s = r["commands"]['python -c "import torch"']["median_s"]
    lines = [
        "# First line of a refused command vs importing torch",
        "",
        f"Median wall time of {r['rounds']} alternating rounds (scripts/bench/first_line.py), {r['cpus']} CPUs, "
        f"1-minute load average {r['load_average_1min']['min']:.1f} to {r['load_average_1min']['max']:.1f}.",
        "",
        "| command | exit | median s | vs import torch |",
        "|---|---|---|---|",
    ]
    for k, v in r["commands"].items():
        lines.append(f"| `{k}` | {v['exit_code']} | {v['median_s']:.2f} | {v['median_s'] / torch_s:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=REPO / "results" / "first_line")
    a = ap.parse_args()
    r = measure(a.rounds)
    a.out.with_suffix(".json").write_text(json.dumps(r, indent=2) + "\n")
    a.out.with_suffix(".md").write_text(markdown(r))
    print(markdown(r))


if __name__ == "__main__":
    main()
