"""The run spec: a composed config read once into frozen, typed settings that the layers below take as arguments
(the dataset loader's, the model's with its relation settings as one value, the trainer's).

Each layer owns the type of its settings (the relation weights' `regnn.core.relation.Relation`, ...); this module
knows which key of the model, dataset and trainer blocks fills which field (regnn.runs.jobspec does the same for
how the runs are run). The values themselves live in the YAML files only: nothing here supplies a default.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from omegaconf import DictConfig, OmegaConf

from regnn.catalog import arch_name
from regnn.core.relation import Relation
from regnn.errors import ConfigError
from regnn.training.options import FullBatchOptions, MinibatchOptions, fanouts_for


@contextlib.contextmanager
def user_errors():
    """A setting the layers below refuse, as the one-line user error. The layers (data loading, the models'
    inputs and builds, the device) raise plain ValueErrors that say what is wrong and how to fix it; around the
    calls the pipeline makes with the config's values, such an error is the user's configuration, not a bug."""
    try:
        yield
    except ValueError as e:
        raise ConfigError(str(e)) from e


def relation_of(block: Mapping) -> Relation:
    """model.relation of a config as the relation weights' settings."""
    return Relation(
        scale=float(block["scale"]),
        negative_slope=float(block["negative_slope"]),
        edge_embeddings=bool(block["edge_embeddings"]),
        self_loop_embeddings=bool(block["self_loop_embeddings"]),
    )


# keys whose `auto` is settled by the dataset: (the value where the target has no features, the value elsewhere)
AUTO_ON_IDS = {"residual": (True, False), "input_width": ("layer", "head")}


@dataclass(frozen=True)
class DataSpec:
    name: str
    loader: Mapping[str, Any]  # regnn.data.load_dataset's other keyword arguments (format, dir, feats_type, ...)

    @classmethod
    def from_config(cls, dcfg: DictConfig | Mapping) -> "DataSpec":
        d = OmegaConf.to_container(dcfg, resolve=True) if isinstance(dcfg, DictConfig) else dict(dcfg)
        d.pop("display_name", None)  # the tables' name for the dataset
        d.pop("metapaths", None)  # read by the meta-path models (model.metapaths), not by the loader
        return cls(name=str(d.pop("name")), loader=d)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    arch: str
    options: Mapping[str, Any] = field(default_factory=dict)  # the model class's other keyword arguments
    relation: Relation | None = None  # RE-GNN backbones only

    @classmethod
    def from_config(cls, mcfg: DictConfig | Mapping) -> "ModelSpec":
        m = OmegaConf.to_container(mcfg, resolve=True) if isinstance(mcfg, DictConfig) else dict(mcfg)
        rel, arch = m.pop("relation", None), arch_name(m)
        m.pop("arch", None)
        return cls(name=str(m.pop("name")), arch=arch, options=m, relation=None if rel is None else relation_of(rel))

    def for_data(self, data) -> "ModelSpec":
        """The settings for this dataset: `auto` (GAT's residual and input width) is on where the target type has
        no features of its own (one-hot ids), off elsewhere. Without features, a target node's own input says
        nothing, so every layer's output is an average over neighbours: the residual map keeps each node's previous
        layer beside that average, and ids projected to a layer's width (heads x hidden) instead of one head's
        give the first layer embeddings as wide as its output (docs/custom_data.md, "Defaults")."""
        auto = [k for k in AUTO_ON_IDS if self.options.get(k) == "auto"]
        if not auto:
            return self
        ids = data.is_id_only(data.target)
        return replace(self, options={**self.options, **{k: AUTO_ON_IDS[k][not ids] for k in auto}})

    def kwargs(self) -> dict:
        """Keyword arguments of the model's prepare and build steps."""
        return {**self.options, **({"relation": self.relation} if self.relation is not None else {})}


def _ints(v) -> tuple[int, ...] | None:
    return None if v is None else tuple(int(x) for x in v)


def training_of(cfg: DictConfig) -> FullBatchOptions | MinibatchOptions:
    """The trainer's settings (trainer, optimizer, precision; the mini-batch trainer also the OGB evaluator)."""
    t = OmegaConf.to_container(cfg.trainer, resolve=True)
    optimizer = OmegaConf.to_container(cfg.optimizer, resolve=True)
    if t["name"] != "minibatch":
        return FullBatchOptions(
            optimizer=optimizer,
            max_epochs=int(t["max_epochs"]),
            patience=int(t["patience"]),
            stop_on=tuple(t["stop_on"]),
            lr_schedule=str(t["lr_schedule"]),
            precision=str(cfg.precision),
        )
    fanouts = fanouts_for(t["fanouts"], cfg.model.num_layers, t["default_fanout"])
    return MinibatchOptions(
        optimizer=optimizer,
        fanouts=fanouts,
        batch_size=int(t["batch_size"]),
        eval=str(t["eval"]),
        eval_fanouts=_ints(t["eval_fanouts"]) or fanouts,
        eval_batch_size=int(t["eval_batch_size"]),
        max_epochs=None if t["max_epochs"] is None else int(t["max_epochs"]),
        patience=int(t["patience"]),
        patience_steps=int(t["patience_steps"]),
        min_steps=int(t["min_steps"]),
        max_batches=None if t["max_batches"] is None else int(t["max_batches"]),
        num_workers=int(t["num_workers"]),
        embed_lr=float(t["embed_lr"]),
        log_every=int(t["log_every"]),
        sampling=str(t["sampling"]),
        profile=bool(t["profile"]),
        stop_on=tuple(t["stop_on"]),
        evaluator=str(OmegaConf.select(cfg, "dataset.ogb_name", default="ogbn-mag")),
    )
