"""Heterogeneous baselines trained by the same pipeline, trainer, splits, seeds and metrics as RE-GNN.

One model per module, registered by its `arch:` name in `regnn.models.ARCHS`. Relation-based: R-GCN, HGT,
Simple-HGN, GTN. Meta-path based: HAN, and GCN-M / GAT-M (the repo's GCN / GAT on one meta-path graph).

The names below are imported from their modules on first use, so that importing one baseline's module (the
package comes first) does not import every other baseline and what it needs.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "GTN": "gtn",
    "HAN": "han",
    "MetapathGraphs": "han",
    "HGT": "hgt",
    "SelfLoopGraph": "inputs",
    "TypedGraph": "inputs",
    "metapath_adjacency": "metapath",
    "metapath_graph": "metapath",
    "metapath_graphs": "metapath",
    "MetapathInputs": "metapath_gnn",
    "build_metapath_gnn": "metapath_gnn",
    "RGCN": "rgcn",
    "SimpleHGN": "simple_hgn",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
