"""Models the trainer can run. Each architecture ("arch" in the model config) has a prepare step, run once per
job to build the graph structures it needs from a HeteroDataset, and a build step, run once per seed. Every
model maps (inputs, features, embed) to (class scores of the target nodes, their representations or None).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from regnn.models.backbones import BACKBONES
from regnn.models.regnn import REGNN, RelationInputs, TypeProjection
from regnn.models import baselines as bl  # after regnn.models.regnn, which the baselines import


@dataclass(frozen=True)
class Arch:
    prepare: Callable[..., Any]  # (data, device, **model kwargs) -> inputs (e.g. meta-path graphs)
    build: Callable[..., Any]  # (inputs, in_dims, num_classes, **model kwargs) -> nn.Module


ARCHS: dict[str, Arch] = {
    "regnn": Arch(prepare=RelationInputs.build, build=REGNN.from_inputs),
    # heterogeneous baselines, one module each under regnn/models/baselines/
    "rgcn": Arch(prepare=bl.TypedGraph.build, build=bl.RGCN.from_inputs),
    "hgt": Arch(prepare=bl.TypedGraph.build, build=bl.HGT.from_inputs),
    "simple_hgn": Arch(prepare=bl.SelfLoopGraph.build, build=bl.SimpleHGN.from_inputs),
    "gtn": Arch(prepare=bl.SelfLoopGraph.build, build=bl.GTN.from_inputs),
    "han": Arch(prepare=bl.MetapathGraphs.build, build=bl.HAN.from_inputs),
    "metapath_gnn": Arch(prepare=bl.MetapathInputs.build, build=bl.build_metapath_gnn),  # GCN-M, GAT-M
}

__all__ = ["ARCHS", "Arch", "BACKBONES", "REGNN", "RelationInputs", "TypeProjection"]
