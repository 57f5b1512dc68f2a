"""scripts/setup/setup.sh's choice of Python: PYTHON wins, else the Python .venv was made with,
else the newest on PATH."""

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from conftest import REPO

BASE = getattr(sys, "_base_executable", sys.executable)


def _which(root: Path, path_dir: Path, **env) -> str:
    e = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    e |= {"PATH": f"{path_dir}:/usr/bin:/bin", **env}
    r = subprocess.run(
        ["bash", str(root / "scripts" / "setup" / "setup.sh"), "--which-python"],
        cwd=root,
        env=e,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_an_existing_venv_keeps_its_python_unless_python_is_set(tmp_path):
    root = tmp_path / "repo"
    (root / "scripts" / "setup").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup" / "setup.sh", root / "scripts" / "setup" / "setup.sh")
    shutil.copy(REPO / "requirements.lock", root / "requirements.lock")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    newest = bin_dir / "python3.13"  # what PATH offers first: a supported Python under another name
    newest.write_text(f'#!/bin/sh\nexec "{BASE}" "$@"\n')
    newest.chmod(0o755)
    ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert _which(root, bin_dir) == f"python3.13 ({ver})"  # no venv yet: the newest on PATH
    venv.create(root / ".venv", with_pip=False)
    chosen = _which(root, bin_dir)
    assert chosen != f"python3.13 ({ver})" and chosen.endswith(f"({ver})")  # the venv's own Python
    assert Path(chosen.rsplit(" ", 1)[0]).resolve() == Path(BASE).resolve()
    assert _which(root, bin_dir, PYTHON=str(newest)) == f"{newest} ({ver})"  # PYTHON wins


FAKE_PIP = """#!/bin/sh
# pip's stand-in: "installs" stubs of the stack into its own venv, slowly enough for a second setup to meet it
here=$(cd "$(dirname "$0")" && pwd)
site=$("$here/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "start $here" >> "$SETUP_LOG"
sleep 1
[ -d "$site" ] || { echo "removed $here" >> "$SETUP_LOG"; exit 7; }
mkdir -p "$site/regnn/core" "$site/torch" "$site/numpy" "$site/hydra"
for m in regnn regnn/core torch numpy hydra; do echo '__version__ = "0"' > "$site/$m/__init__.py"; done
echo 'def main(): pass' > "$site/regnn/core/kernels.py"
echo "end $here" >> "$SETUP_LOG"
"""


def test_two_setups_sharing_an_incomplete_cache_install_it_once(tmp_path):
    """The second waits for the first (a lock beside the cache) and then finds the cache complete, instead of
    removing the folder the first is installing into."""
    fake_py = tmp_path / "python3"
    fake_py.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = -m ] && [ "$2" = venv ]; then\n'
        f'  "{BASE}" -m venv --without-pip "$3" || exit 1\n'
        f"  cat > \"$3/bin/pip\" <<'EOF'\n{FAKE_PIP}EOF\n"
        '  chmod +x "$3/bin/pip"; exit 0\n'
        "fi\n"
        f'exec "{BASE}" "$@"\n'
    )
    fake_py.chmod(0o755)
    roots = []
    for name in ("a", "b"):  # two checkouts, one cache
        root = tmp_path / name
        (root / "scripts" / "setup").mkdir(parents=True)
        shutil.copy(REPO / "scripts" / "setup" / "setup.sh", root / "scripts" / "setup" / "setup.sh")
        shutil.copy(REPO / "requirements.lock", root / "requirements.lock")
        roots.append(root)
    log = tmp_path / "pip.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "REGNN_VENV", "VIRTUAL_ENV")}
    env |= {"PYTHON": str(fake_py), "REGNN_VENV_CACHE": str(tmp_path / "cache"), "SETUP_LOG": str(log)}
    procs = [
        subprocess.Popen(
            ["bash", str(r / "scripts" / "setup" / "setup.sh")],
            cwd=r,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for r in roots
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    cache = [ln for ln in log.read_text().splitlines() if "/cache/" in ln]
    assert len(cache) == 2 and cache[0].startswith("start") and cache[1].startswith("end"), cache  # once, whole
    (deps,) = (tmp_path / "cache").glob("deps-py*[!k]")
    assert (deps / ".complete").is_file()
    assert sum("installing requirements.lock" in o for o, _ in outs) == 1
