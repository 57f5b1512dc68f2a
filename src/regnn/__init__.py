"""regnn: relation embeddings (RE-GNN) that let homogeneous GNNs learn on heterogeneous graphs."""
import os as _os

# DGL picks its backend from the environment and otherwise writes ~/.dgl/config.json; never let it guess.
_os.environ.setdefault("DGLBACKEND", "pytorch")
# `import dgl` imports ogb, which starts a thread asking PyPI whether ogb is outdated, and importing the
# `outdated` package starts one more, about `outdated` itself. Runs must not reach for the network (where there is
# none, every process waited ~2 s at exit for those threads and warned), so unless something imported it
# already, `outdated` is replaced by a stand-in whose checks report "up to date" without a request.
_os.environ.setdefault("OUTDATED_IGNORE", "1")


def _no_network_outdated() -> None:
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
    stub.check_outdated, stub.warn_if_outdated = check_outdated, warn_if_outdated
    sys.modules["outdated"] = stub


_no_network_outdated()

__version__ = "0.1.0"
