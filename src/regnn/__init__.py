"""regnn: relation embeddings (RE-GNN) that let homogeneous GNNs learn on heterogeneous graphs."""

import os as _os

# DGL (optional: format: dgl custom graphs) picks its backend from the environment and otherwise writes
# ~/.dgl/config.json; never let it guess.
_os.environ.setdefault("DGLBACKEND", "pytorch")
# Importing ogb (dataset=ogbn_mag) starts a thread asking PyPI whether ogb is outdated, and importing the
# `outdated` package starts one more, about `outdated` itself. Runs must not reach for the network (where there is
# none, every process waited ~2 s at exit for those threads and warned), so unless something imported it
# already, `outdated` is replaced, for the whole process, by a stand-in whose checks report "up to date" without
# a request: its two functions, warning classes and version, not its submodules (import `outdated` before regnn
# to keep the real package; its checks are then made offline the same way).
_os.environ.setdefault("OUTDATED_IGNORE", "1")


def _no_network_outdated() -> None:
    import importlib.machinery
    import importlib.metadata
    import sys
    import types

    def check_outdated(package, version, *args, **kwargs):
        return False, version

    def warn_if_outdated(*args, **kwargs):
        return None

    if "outdated" in sys.modules:  # imported before regnn: its own check already ran; stop the next ones
        sys.modules["outdated"].check_outdated = check_outdated
        sys.modules["outdated"].warn_if_outdated = warn_if_outdated
        return
    stub = types.ModuleType("outdated", "regnn's offline stand-in for the `outdated` package (no PyPI requests)")
    stub.__spec__ = importlib.machinery.ModuleSpec("outdated", None)
    try:
        stub.__version__ = importlib.metadata.version("outdated")
    except importlib.metadata.PackageNotFoundError:
        stub.__version__ = "0"
    stub.check_outdated, stub.warn_if_outdated = check_outdated, warn_if_outdated
    stub.OutdatedWarningBase = type("OutdatedWarningBase", (Warning,), {"__module__": "outdated"})
    for name in ("OutdatedPackageWarning", "OutdatedCheckFailedWarning", "OutdatedCacheFailedWarning"):
        setattr(stub, name, type(name, (stub.OutdatedWarningBase,), {"__module__": "outdated"}))
    sys.modules["outdated"] = stub


_no_network_outdated()

__version__ = "0.1.0"


def __getattr__(name: str):
    # regnn.run(overrides), regnn.predict(run_dir) and regnn.explain(run_dir): train.py, predict.py and explain.py
    # from Python (regnn.pipeline.api),
    # imported on first use only
    if name in ("run", "predict", "explain"):
        from regnn.pipeline import api

        return getattr(api, name)
    raise AttributeError(f"module 'regnn' has no attribute {name!r}")
