#!/usr/bin/env bash
# The GPU check, a few minutes on one GPU: the `gpu` tests (tests/test_gpu.py on CUDA), then DBLP RE-GCN and
# RE-GAT trained through `train.py device=cuda` (10 seeds each), their test scores and ms per epoch written to
# results/gpu_dblp.json and results/gpu_dblp.md (beside the CPU's numbers of Table 2), the runs under
# outputs/gpu_check/<time>/.
#
#   scripts/bench/gpu_check.sh
#
# Settings by environment: PY (the python; default .venv/bin/python, else python3), RUNS (10), REPORT (results/gpu_dblp: the report's path without .json/.md),
# MODELS ("re_gcn re_gat": any models of Table 2 or Figure 3), DEVICE (cuda; cpu tries the script on a machine without
# a GPU) and EXTRA (more train.py overrides).
#
# It needs what train.py needs (docs/gpu.md): torch with CUDA, hydra-core, omegaconf, pytest, numpy, scipy, pandas,
# scikit-learn, ogb, and data/DBLP (`make data`).
# It names whatever is missing and stops before training anything.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
RUNS=${RUNS:-10}
REPORT=${REPORT:-results/gpu_dblp}
DEVICE=${DEVICE:-cuda}
WORK=outputs/gpu_check/$(date -u +%Y%m%dT%H%M%SZ)

if [ -e "$REPORT.json" ] || [ -e "$REPORT.md" ]; then
    echo "gpu_check: $REPORT.json or $REPORT.md exists; move it away first (nothing is overwritten)" >&2
    exit 2
fi
DEVICE=$DEVICE "$PY" - <<'EOF' || exit 2
import importlib, os, pathlib, sys
need = {"torch": "torch (a CUDA build)",
        "hydra": "hydra-core==1.3.8", "omegaconf": "omegaconf==2.3.1 (and antlr4-python3-runtime==4.9.3)",
        "pytest": "pytest", "numpy": "numpy", "scipy": "scipy", "pandas": "pandas", "sklearn": "scikit-learn",
        "ogb": "ogb"}
missing, failed = [], set()
for module, what in need.items():
    try:
        importlib.import_module(module)
    except Exception as e:  # not installed, or built for another torch
        failed.add(module)
        missing.append(f"{what}: import {module} failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
if "torch" not in failed:
    import torch
    if os.environ["DEVICE"] != "cpu" and not torch.cuda.is_available():
        missing.append(f"a CUDA device: torch {torch.__version__} sees none (CUDA build: {torch.version.cuda})")
if not pathlib.Path("data/DBLP/adjM.npz").is_file():
    missing.append("data/DBLP: run `make data` (or copy data/DBLP from a machine that has it)")
for m in missing:
    print(f"gpu_check: missing {m}", file=sys.stderr)
if missing:
    print(f"gpu_check: {sys.executable} lacks the above; docs/gpu.md says how to bring it", file=sys.stderr)
    sys.exit(1)
EOF

mkdir -p "$WORK"
set +e
"$PY" -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$WORK/pytest_gpu.log"
tests_rc=${PIPESTATUS[0]}
for model in ${MODELS:-re_gcn re_gat}; do
    # shellcheck disable=SC2086  # EXTRA: several overrides
    "$PY" train.py dataset=dblp model=$model device="$DEVICE" runs="$RUNS" logger=none hydra.run.dir="$WORK/$model" \
        ${EXTRA:-}
done
set -e

EXTRA=${EXTRA:-} MODELS=${MODELS:-re_gcn re_gat} "$PY" - "$WORK" "$REPORT" "$tests_rc" <<'EOF'
import json, os, pathlib, sys
work, out, tests_rc = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
from regnn.reporting.cells import CELLS, MissingCells, load_cell, metric
from regnn.reporting.common import label  # the tables' names: RE-GCN, GraphSAGE, Simple-HGN, ...

models = os.environ["MODELS"].split()


def cpu_micro_f1(model):
    """The model's DBLP cell as Table 2 and Figure 3 report it (the pool's, else the summary in results/cells)."""
    try:
        cell = load_cell(CELLS, f"dblp_{model}", archive=pathlib.Path("results/cells"))
    except MissingCells:
        return "n/a"
    return "{:.2f} ± {:.2f}".format(*metric(cell, "test_micro_f1"))


tail = (work / "pytest_gpu.log").read_text().strip().splitlines()
extra = os.environ["EXTRA"]
report = {"gpu_tests": {"exit_status": tests_rc, "summary": tail[-1] if tail else ""}, "overrides": extra, "models": {}}
rows = []
for model in models:
    p = work / model / "results.json"
    if not p.is_file():
        report["models"][model] = {"error": f"no {p}: the training failed (its log is in {p.parent})"}
        continue
    s = json.loads(p.read_text())
    m, env = s["metrics"], s["environment"]
    report["environment"] = {k: env.get(k) for k in ("device", "device_note", "torch", "python")}
    report["models"][model] = {"runs": s["finished_runs"], "failed_runs": s["failed_runs"], "cell": str(p.parent),
                               **{k: m[k] for k in ("test_micro_f1", "test_macro_f1", "epochs", "epoch_time_s")}}
    rows.append(f"| {label(model)} | {s['finished_runs']} | {m['test_micro_f1']['mean']:.2f} ± {m['test_micro_f1']['std']:.2f}"
                f" | {m['test_macro_f1']['mean']:.2f} ± {m['test_macro_f1']['std']:.2f} | {cpu_micro_f1(model)} | "
                f"{1e3 * m['epoch_time_s']['mean']:.1f} |")
pathlib.Path(out + ".json").write_text(json.dumps(report, indent=2) + "\n")
env = report.get("environment", {})
pathlib.Path(out + ".md").write_text("\n".join([
    "# GPU training on DBLP through train.py", "",
    f"`scripts/bench/gpu_check.sh`: {env.get('device_note', 'no run finished')}, torch {env.get('torch')}, Python "
    f"{env.get('python')}; seeds 0-{max((r.get('runs', 0) for r in report['models'].values()), default=0) - 1}, "
    f"the configured trainer{f' with {extra}' if extra else ''}. gpu tests: {report['gpu_tests']['summary']}.", "",
    "| model | runs | test Micro-F1 | test Macro-F1 | Micro-F1 on the CPU, 10 seeds | ms per epoch (median of a run, mean over runs) |",
    "|---|---|---|---|---|---|", *rows, ""]))
print(f"gpu_check: {out}.json, {out}.md")
failed = tests_rc != 0 or any("error" in r or r["failed_runs"] for r in report["models"].values())
sys.exit(1 if failed else 0)
EOF
