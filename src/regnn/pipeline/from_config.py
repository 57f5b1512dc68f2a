"""Config keys to call arguments: the model class's keyword arguments, its architecture, the dataset loader's."""
from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from regnn.data import load_dataset
from regnn.errors import ConfigError
from regnn.models import ARCHS
from regnn.spec import ARCH_DEFAULT, ModelSpec


def model_kwargs(mcfg: DictConfig) -> dict:
    """The model's keyword arguments, read through the run spec (regnn.spec)."""
    return ModelSpec.from_config(mcfg).kwargs()


def arch_of(mcfg: DictConfig):
    name = mcfg.get("arch", ARCH_DEFAULT)
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
