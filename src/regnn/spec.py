"""The run spec: a composed config read once into frozen, typed settings that the layers below take as arguments.

Each layer owns the type of its settings (the relation weights' `regnn.core.relation.Relation`, ...); this module is
the one place that knows which config key fills which field. The values themselves live in the YAML files only:
nothing here supplies a default.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from omegaconf import DictConfig, OmegaConf

from regnn.core.relation import Relation

ARCH_DEFAULT = "regnn"  # a model config without `arch` is a backbone with relation weights


def relation_of(block: Mapping) -> Relation:
    """model.relation of a config as the relation weights' settings."""
    return Relation(scale=float(block["scale"]), negative_slope=float(block["negative_slope"]),
                    edge_embeddings=bool(block["edge_embeddings"]),
                    self_loop_embeddings=bool(block["self_loop_embeddings"]))


@dataclass(frozen=True)
class ModelSpec:
    name: str
    arch: str
    options: Mapping[str, Any] = field(default_factory=dict)  # the model class's other keyword arguments
    relation: Relation | None = None  # RE-GNN backbones only

    @classmethod
    def from_config(cls, mcfg: DictConfig | Mapping) -> "ModelSpec":
        m = OmegaConf.to_container(mcfg, resolve=True) if isinstance(mcfg, DictConfig) else dict(mcfg)
        rel = m.pop("relation", None)
        return cls(name=str(m.pop("name")), arch=str(m.pop("arch", ARCH_DEFAULT)), options=m,
                   relation=None if rel is None else relation_of(rel))

    def kwargs(self) -> dict:
        """Keyword arguments of the model's prepare and build steps."""
        return {**self.options, **({"relation": self.relation} if self.relation is not None else {})}
