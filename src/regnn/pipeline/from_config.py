"""Config keys to call arguments: the model class's keyword arguments, its architecture, the dataset loader's,
the device."""

from __future__ import annotations

from omegaconf import DictConfig

from regnn.data import load_dataset
from regnn.errors import ConfigError
from regnn.models import ARCHS
from regnn.catalog import arch_name
from regnn.spec import DataSpec, ModelSpec, user_errors
from regnn.training.device import select_device


def spec_of(model: ModelSpec | DictConfig, data=None) -> ModelSpec:
    """The model's settings (regnn.spec.ModelSpec): a job reads them once per cell and passes them on. data: the
    dataset they are for, which settles those that depend on it (ModelSpec.for_data)."""
    spec = model if isinstance(model, ModelSpec) else ModelSpec.from_config(model)
    return spec if data is None else spec.for_data(data)


def model_kwargs(model: ModelSpec | DictConfig) -> dict:
    """The model's keyword arguments, read through the run spec (regnn.spec)."""
    return spec_of(model).kwargs()


def arch_of(model: ModelSpec | DictConfig):
    name = model.arch if isinstance(model, ModelSpec) else arch_name(model)
    if name not in ARCHS:
        raise ConfigError(f"model.arch={name!r} is not valid: known architectures {sorted(ARCHS)}")
    return ARCHS[name]


# The calls with the config's values: a value a layer refuses (a ValueError) reaches the user as one line.


def prepare_inputs(model: ModelSpec | DictConfig, data, device):
    """The model's inputs (its graph structures) on the device, once per job."""
    spec = spec_of(model, data)
    with user_errors():
        return arch_of(spec).prepare(data, device, **spec.kwargs())


def build_model(model: ModelSpec | DictConfig, data, inputs):
    spec = spec_of(model, data)
    with user_errors():
        return arch_of(spec).build(inputs, data.in_dims, data.num_classes, **spec.kwargs())


def build_sampled(model: ModelSpec | DictConfig, data, graph, embed_dim: int | None, input_dropout: str = "projected"):
    """The mini-batch trainer's model on the sampler's graph (ARCHS[arch].sampled); embed_dim and input_dropout:
    the trainer's (conf/trainer/minibatch.yaml)."""
    spec = spec_of(model, data)
    with user_errors():
        return arch_of(spec).sampled(
            graph,
            data.features,
            data.num_classes,
            embed_dim=embed_dim,
            input_dropout=input_dropout,
            **spec.kwargs(),
        )


def device_of(requested: str):
    """(device, why) for a config's `device` (auto, cpu, cuda, cuda:N); a device torch cannot use is the user's
    one-line error."""
    with user_errors():
        return select_device(str(requested))


def load_data(dcfg: DictConfig):
    spec = DataSpec.from_config(dcfg)
    with user_errors():
        return load_dataset(spec.name, **spec.loader)
