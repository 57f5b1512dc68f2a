"""regnn: relation embeddings (RE-GNN) that let homogeneous GNNs learn on heterogeneous graphs."""
import os as _os

# DGL picks its backend from the environment and otherwise writes ~/.dgl/config.json; never let it guess.
_os.environ.setdefault("DGLBACKEND", "pytorch")
# `import dgl` imports ogb, which starts a thread asking PyPI whether ogb is outdated. Runs must not reach for
# the network (and it warns at exit where there is none), so that check is made a no-op before ogb loads.
_os.environ.setdefault("OUTDATED_IGNORE", "1")
try:
    import outdated as _outdated

    _outdated.check_outdated = lambda package, version, *a, **k: (False, version)
except ImportError:  # ogb not installed: nothing to silence
    pass

__version__ = "0.1.0"
