"""Heterogeneous baselines trained by the same pipeline, trainer, splits, seeds and metrics as RE-GNN.

One model per module, registered by its `arch:` name in `regnn.models.ARCHS`. Relation-based: R-GCN, HGT,
Simple-HGN, GTN. Meta-path based: HAN, and GCN-M / GAT-M (the repo's GCN / GAT on one meta-path graph).
"""
from __future__ import annotations

from regnn.models.baselines.gtn import GTN
from regnn.models.baselines.han import HAN, MetapathGraphs
from regnn.models.baselines.hgt import HGT
from regnn.models.baselines.inputs import SelfLoopGraph, TypedGraph
from regnn.models.baselines.metapath import metapath_adjacency, metapath_graph, metapath_graphs
from regnn.models.baselines.metapath_gnn import MetapathInputs, build_metapath_gnn
from regnn.models.baselines.rgcn import RGCN
from regnn.models.baselines.simple_hgn import SimpleHGN

__all__ = ["GTN", "HAN", "HGT", "RGCN", "SimpleHGN", "MetapathGraphs", "MetapathInputs",
           "SelfLoopGraph", "TypedGraph", "build_metapath_gnn", "metapath_adjacency", "metapath_graph",
           "metapath_graphs"]
