#!/usr/bin/env bash
# Creates .venv (or $REGNN_VENV: one per Python, as CI keeps them) once and reuses it. The heavy, pinned
# third-party stack (torch is ~5 GB) is installed once per
# machine into a cache keyed by the hash of requirements.lock and shared by every checkout through a .pth file;
# .venv itself only holds the editable install of this package. REGNN_VENV_CACHE=none installs everything
# straight into .venv instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${REGNN_VENV:-.venv}
# this machine's pip config names local index folders that may not exist; hide those warnings only
quiet_pip() { "$@" 2> >(grep -v "^WARNING: Location 'file://" >&2); }

# the Python: $PYTHON if set, else the one .venv was made with, else the newest supported one on PATH (3.13, 3.12,
# 3.11, then plain python3)
supported() { "$1" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; }
if [ -n "${PYTHON:-}" ]; then
  PY=$PYTHON
  supported "$PY" || { echo "setup: PYTHON=$PY is not Python 3.11, 3.12 or 3.13 (or does not run); regnn supports those" >&2; exit 1; }
elif [ -x "$venv/bin/python" ] && supported "$venv/bin/python"; then
  # an existing .venv keeps its Python: only an explicit PYTHON makes it again (a make target run from a shell
  # whose PATH finds another Python, e.g. under pyenv, must not replace the venv a user set up)
  PY=$("$venv/bin/python" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
else
  PY=
  for c in python3.13 python3.12 python3.11 python3; do
    if command -v "$c" >/dev/null && supported "$c"; then PY=$c; break; fi
  done
  [ -n "$PY" ] || { echo "setup: no Python 3.11, 3.12 or 3.13 found on PATH; install one, or set PYTHON=/path/to/python3.x" >&2; exit 1; }
fi
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "${1:-}" = "--which-python" ]; then echo "$PY ($pyver)"; exit 0; fi  # the choice alone, nothing installed
lock_hash=$(sha256sum requirements.lock | cut -c1-16)
# the lock is the whole constraint: a site-wide pip constraint file that caps a locked version would stop the install
export PIP_CONSTRAINT="$PWD/requirements.lock"
site_of() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

if [ -x "$venv/bin/python" ] && [ "$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$pyver" ]; then
  echo "setup: $venv was made with another Python; making it again with $PY ($pyver)"
  rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv with $PY (Python $pyver)"
  "$PY" -m venv "$venv"
else
  echo "setup: $venv uses Python $pyver"
fi

if [ "${REGNN_VENV_CACHE:-}" = "none" ]; then
  if [ "$(cat "$venv/.lock-hash" 2>/dev/null)" != "$lock_hash" ]; then
    echo "setup: installing requirements.lock into $venv (a few minutes the first time)"
    quiet_pip "$venv/bin/pip" install -q --disable-pip-version-check -r requirements.lock
    echo "$lock_hash" > "$venv/.lock-hash"
  fi
else
  deps=${REGNN_VENV_CACHE:-$HOME/.cache/regnn}/deps-py$pyver-$lock_hash
  if [ ! -f "$deps/.complete" ]; then
    mkdir -p "$(dirname "$deps")"
    # one installer per cache: a second setup started meanwhile (two make targets, two checkouts) waits here,
    # then finds .complete, instead of removing the folder the first is installing into
    exec 9>"$deps.lock"
    if command -v flock >/dev/null; then flock 9; else echo "setup: no flock (util-linux): run one setup at a time" >&2; fi
  fi
  if [ ! -f "$deps/.complete" ]; then
    echo "setup: installing requirements.lock into the shared cache $deps (a few minutes, once per machine)"
    rm -rf "$deps"
    "$PY" -m venv "$deps"
    # a changed lock starts from the newest complete cache (hard links: no copy, no download), so pip fetches
    # only the packages that differ; without one (or across filesystems) it installs everything
    seed=$(ls -dt "$(dirname "$deps")"/deps-py$pyver-* 2>/dev/null | while read -r d; do
      [ -f "$d/.complete" ] && [ "$d" != "$deps" ] && { echo "$d"; break; }; done || true)
    if [ -n "$seed" ] && ! cp -alf "$(site_of "$seed")/." "$(site_of "$deps")/" 2>/dev/null; then
      rm -rf "$deps" && "$PY" -m venv "$deps"
    elif [ -n "$seed" ]; then
      # pip keeps the packages it finds installed, so their programs in bin/ (ruff's binary, console scripts)
      # come from the seed too, their first line pointing at this cache's Python
      for f in "$seed"/bin/*; do
        [ -e "$deps/bin/$(basename "$f")" ] && continue
        cp -p "$f" "$deps/bin/" && sed -i "1s|^#!$seed/bin/python|#!$deps/bin/python|" "$deps/bin/$(basename "$f")"
      done
    fi
    quiet_pip "$deps/bin/pip" install -q --disable-pip-version-check -r requirements.lock
    touch "$deps/.complete"
  fi
  exec 9>&-  # releases the lock (a no-op where it was not taken)
  # Make the cached packages visible inside .venv (addsitedir also processes their own .pth files).
  # (rewritten only when it changes: parallel make targets run this script side by side)
  pth="$(site_of "$venv")/_regnn_deps.pth"
  line="import site; site.addsitedir('$(site_of "$deps")')"
  if [ "$(cat "$pth" 2>/dev/null)" != "$line" ]; then echo "$line" > "$pth.$$" && mv -f "$pth.$$" "$pth"; fi
fi

if ! "$venv/bin/python" -c 'import regnn' 2>/dev/null || [ ! -f "$venv/.editable" ]; then
  echo "setup: installing regnn (editable) into $venv"
  quiet_pip "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
  touch "$venv/.editable"
fi
# the stack imports, and the fused aggregation kernels load (C++, built once per machine into
# ~/.cache/torch_extensions; a missing compiler only means the slower pure-torch path); one process for both
"$venv/bin/python" -c 'import sys, regnn, torch, numpy, hydra
print(f"setup: ok (Python {sys.version.split()[0]}, torch {torch.__version__}, numpy {numpy.__version__}, "
      f"hydra {hydra.__version__})", flush=True)
from regnn.core.kernels import main; main()' 2> >(grep -v "No CUDA runtime is found" >&2)
