#!/usr/bin/env bash
# The GPU floor check (scripts/bench/gpu_floor.py) on a GPU machine whose Python has torch with CUDA but not the
# lock's other packages, and no network: the few pure-Python packages regnn needs beside torch travel as wheels.
#
#   scripts/bench/gpu_floor.sh wheels        # here, with network: the wheels into .whl/ (git-ignored)
#   scripts/bench/gpu_floor.sh run OUT       # there, in the checkout with .whl/ and data/ beside it: the check
#
# `run` installs the wheels into /tmp/site where hydra is missing, puts src/ on PYTHONPATH (regnn runs from the
# checkout, not installed), checks that torch sees a GPU and that data/DBLP, ACM and IMDB are there, then runs the
# check with its report in OUT (gpu_floor.json, gpu_floor.md) and its log in OUT/gpu_floor.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
WHEELS="hydra-core==1.3.8 omegaconf==2.3.1 ogb==1.3.6 outdated==0.2.2 littleutils==0.2.4"

case "${1:-}" in
  wheels)
    PY=${PY:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
    mkdir -p .whl
    # shellcheck disable=SC2086
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "${PYVER:-3.12}" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl $WHEELS
    "$PY" -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3  # published as a source archive only
    ls .whl
    ;;
  run)
    OUT=${2:?usage: $0 run OUT}
    mkdir -p "$OUT"
    if ! python3 -c "import hydra" 2>/dev/null; then
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
          .whl/*.whl
      export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    fi
    export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
    case " ${*:3} " in
      *" --device cpu "*) ;;  # the script tried on a machine without a GPU
      *) python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_floor: torch sees no GPU')" ;;
    esac
    for d in DBLP ACM IMDB; do
      [ -d "data/$d" ] || { echo "gpu_floor: data/$d is missing; carry data/ along (make data fetches it)" >&2; exit 2; }
    done
    # run folders outside OUT: only the report and the log need to come back
    python3 scripts/bench/gpu_floor.py --out "$OUT" --work /tmp/gpu_floor_work "${@:3}" 2>&1 | tee "$OUT/gpu_floor.log"
    ;;
  *)
    echo "usage: $0 wheels | run OUT [gpu_floor.py options]" >&2
    exit 2
    ;;
esac
