"""Models the trainer can run. Each architecture ("arch" in the model config) has a prepare step, run once per
job to build the graph structures it needs from a HeteroDataset, and a build step, run once per seed. Every
model maps (inputs, features, embed) to (class scores of the target nodes, their representations or None).

RE-GNN needs torch only; the heterogeneous baselines are built on DGL's modules, so they are named here by
module path and imported on first use (`import regnn.models` works where DGL is missing).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from regnn.models.backbones import BACKBONES
from regnn.models.regnn import REGNN, RelationInputs
from regnn.nn.projection import TypeProjection
from regnn.models.sampled import SampledREGNN


@dataclass(frozen=True)
class Arch:
    prepare: Callable[..., Any]  # (data, device, **model kwargs) -> inputs (e.g. meta-path graphs)
    build: Callable[..., Any]  # (inputs, in_dims, num_classes, **model kwargs) -> nn.Module
    # the mini-batch trainer's build, for an architecture it can train on sampled blocks:
    # (sampler's graph, features, num_classes, embed_dim=, **model kwargs) -> nn.Module
    sampled: Callable[..., Any] | None = None


@dataclass(frozen=True)
class LazyArch:
    """An Arch whose prepare and build live in a module imported on first use: "module:attr.attr"."""

    prepare_path: str
    build_path: str
    sampled = None  # the baselines train full-batch only

    @property
    def prepare(self) -> Callable[..., Any]:
        return _resolve(self.prepare_path)

    @property
    def build(self) -> Callable[..., Any]:
        return _resolve(self.build_path)


def _resolve(path: str):
    module, _, attrs = path.partition(":")
    obj = importlib.import_module(module)
    for name in attrs.split("."):
        obj = getattr(obj, name)
    return obj


_BL = "regnn.models.baselines"
ARCHS: dict[str, Arch | LazyArch] = {
    "regnn": Arch(prepare=RelationInputs.build, build=REGNN.from_inputs, sampled=SampledREGNN.from_graph),
    # heterogeneous baselines, one module each under regnn/models/baselines/
    "rgcn": LazyArch(f"{_BL}:TypedGraph.build", f"{_BL}:RGCN.from_inputs"),
    "hgt": LazyArch(f"{_BL}:TypedGraph.build", f"{_BL}:HGT.from_inputs"),
    "simple_hgn": LazyArch(f"{_BL}:SelfLoopGraph.build", f"{_BL}:SimpleHGN.from_inputs"),
    "gtn": LazyArch(f"{_BL}:SelfLoopGraph.build", f"{_BL}:GTN.from_inputs"),
    "han": LazyArch(f"{_BL}:MetapathGraphs.build", f"{_BL}:HAN.from_inputs"),
    "metapath_gnn": LazyArch(f"{_BL}:MetapathInputs.build", f"{_BL}:build_metapath_gnn"),  # GCN-M, GAT-M
    # skip-gram embeddings, then a classifier (its trainer: regnn.training.skipgram)
    "metapath2vec": LazyArch(f"{_BL}.metapath2vec:WalkInputs.build", f"{_BL}.metapath2vec:Metapath2Vec.from_inputs"),
    "rhgnn": LazyArch(f"{_BL}.rhgnn:RelationGraphs.build", f"{_BL}.rhgnn:RHGNN.from_inputs"),
    "magnn": LazyArch(f"{_BL}.magnn:MetapathInstances.build", f"{_BL}.magnn:MAGNN.from_inputs"),
    "magnn_ac": LazyArch(f"{_BL}.magnn_ac:CompletionInputs.build", f"{_BL}.magnn_ac:MAGNNAC.from_inputs"),
}

__all__ = ["ARCHS", "Arch", "BACKBONES", "LazyArch", "REGNN", "RelationInputs", "TypeProjection"]
