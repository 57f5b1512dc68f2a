"""Fused C++ kernels for RE-GNN's weighted aggregation (csrc/re_aggregate.cpp), built on first use.

torch's cpp_extension compiles them once per machine (a C++ compiler and ninja are needed; a few tens of
seconds) into ~/.cache/torch_extensions (TORCH_EXTENSIONS_DIR moves it); every later process loads the built
module. Where the build is impossible (no compiler) the pure-torch path of regnn.core.adjacency is used, with a
warning once. REGNN_KERNELS=0 turns the kernels off (the torch path then runs; both are tested against a dense
reference). scripts/setup/setup.sh (make setup) builds them ahead.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
from pathlib import Path

log = logging.getLogger("regnn")
SOURCE = Path(__file__).with_name("csrc") / "re_aggregate.cpp"


def enabled() -> bool:
    return os.environ.get("REGNN_KERNELS", "1") != "0"


@functools.lru_cache(maxsize=None)
def _build():
    import contextlib
    import io

    import torch

    with contextlib.redirect_stderr(io.StringIO()):  # its import notes "No CUDA runtime is found" on CPU machines
        from torch.utils.cpp_extension import _get_build_directory, load

    # OpenMP: link the runtime torch itself loaded (the wheel bundles its own libgomp), so that
    # torch.set_num_threads also sets the kernels' thread count; a second runtime would ignore it
    torch_lib = Path(torch.__file__).parent / "lib"
    bundled = sorted(glob.glob(str(torch_lib / "libgomp*.so*")))
    ldflags = [f"-L{torch_lib}", f"-l:{Path(bundled[0]).name}", f"-Wl,-rpath,{torch_lib}"] if bundled else ["-fopenmp"]
    # built for this CPU's vector units (-march=native), so the build is named after the CPU: a home folder
    # shared by machines of other kinds gets one build per kind, never another CPU's instructions
    cflags = ["-O3", "-fopenmp", "-march=native", "-mprefer-vector-width=512"]  # 512: a 64-wide row in 4 registers
    tag = hashlib.sha1("|".join([_cpu_signature(), SOURCE.read_text(), *cflags, *ldflags]).encode()).hexdigest()[:10]
    name = f"regnn_re_aggregate_{tag}"
    build_dir = Path(_get_build_directory(name, verbose=False))
    if not list(build_dir.glob("*.so")) or not (build_dir / SOURCE.name).is_file():
        log.info("building the fused aggregation kernels (once per machine, about a minute)")
    return load(
        name=name, sources=[str(stable_source(build_dir))], extra_cflags=cflags, extra_ldflags=ldflags, verbose=False
    )


def stable_source(build_dir: Path) -> Path:
    """A copy of SOURCE in the build folder, compiled instead of SOURCE itself: the build records its sources'
    paths, so building from the checkout made every other checkout of the repo (a clean clone, a worktree)
    rebuild (~40 s), and the first again after it. The folder is named after the source's contents, so the
    copy is written once: created exclusively (of processes starting side by side one writes it, and none
    touches it after a build has begun), replaced only if it differs from SOURCE (damaged)."""
    dst = build_dir / SOURCE.name
    text = SOURCE.read_bytes()
    if dst.is_file() and dst.read_bytes() == text:
        return dst
    tmp = build_dir / f".{SOURCE.name}.{os.getpid()}.tmp"
    tmp.write_bytes(text)
    try:
        if dst.is_file():
            os.replace(tmp, dst)
        else:
            try:
                os.link(tmp, dst)  # fails if another process made it meanwhile: theirs is the same text
            except FileExistsError:
                pass
    finally:
        tmp.unlink(missing_ok=True)
    return dst


def _cpu_signature() -> str:
    """Model name and feature flags of this CPU (Linux), else the platform's processor string."""
    import platform

    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
        return "|".join(sorted({ln.split(":", 1)[1].strip() for ln in info if ln.startswith(("model name", "flags"))}))
    except OSError:
        return platform.processor() or platform.machine()


_FAILED: list[str] = []  # why the build failed, once it has: not tried again in this process


def load_kernels():
    """The compiled module, or None (kernels turned off, or they could not be built here)."""
    if not enabled() or _FAILED:
        return None
    try:
        return _build()
    except Exception as e:  # no compiler, no ninja, a failed build: the torch path still works
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        _FAILED.append(first)
        log.warning("fused aggregation kernels unavailable (%s); using the slower pure-torch path", first)
        return None


def main() -> None:
    """Builds (first time) or loads the kernels and says which path RE-GNN's aggregation will take."""
    import time

    t = time.perf_counter()
    ok = load_kernels() is not None
    print(
        f"setup: fused aggregation kernels {'ready' if ok else 'UNAVAILABLE, the pure-torch path will be used'} "
        f"({time.perf_counter() - t:.1f}s)"
    )


if __name__ == "__main__":
    main()
