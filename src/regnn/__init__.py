"""regnn: relation embeddings (RE-GNN) that let homogeneous GNNs learn on heterogeneous graphs."""
import os as _os

# DGL picks its backend from the environment and otherwise writes ~/.dgl/config.json; never let it guess.
_os.environ.setdefault("DGLBACKEND", "pytorch")

__version__ = "0.1.0"
