"""Config keys to call arguments: the model class's keyword arguments, its architecture, the dataset loader's."""
from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from regnn.data import load_dataset
from regnn.errors import ConfigError
from regnn.models import ARCHS


def model_kwargs(mcfg: DictConfig) -> dict:
    """Plain keyword arguments for the model class from the model config (all but name and arch)."""
    m = OmegaConf.to_container(mcfg, resolve=True)
    m.pop("name", None)
    m.pop("arch", None)
    if "relation" in m:  # RE-GNN: the relation block becomes flat arguments
        rel = m.pop("relation")
        m |= {"scale": rel.get("scale", 1.0), "edge_embeddings": rel["edge_embeddings"],
              "self_loop_embeddings": rel["self_loop_embeddings"], "relation_slope": rel.get("negative_slope", 0.01)}
    return m


def arch_of(mcfg: DictConfig):
    name = mcfg.get("arch", "regnn")
    if name not in ARCHS:
        raise ConfigError(f"model.arch={name!r} is not valid: known architectures {sorted(ARCHS)}")
    return ARCHS[name]


def build_model(mcfg: DictConfig, data, inputs):
    return arch_of(mcfg).build(inputs, data.in_dims, data.num_classes, **model_kwargs(mcfg))


def load_data(dcfg: DictConfig):
    d = OmegaConf.to_container(dcfg, resolve=True)
    d.pop("display_name", None)
    d.pop("metapaths", None)  # read by the meta-path models (model.metapaths), not by the loader
    return load_dataset(**d)
