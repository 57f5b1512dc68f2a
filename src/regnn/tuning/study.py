"""A tune's Optuna study in its storage (SQLite): opened or created, listed, its sampler built from the config;
a storage an older or newer Optuna wrote is refused in one line that says how to read it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf

from regnn.errors import ConfigError


@contextlib.contextmanager
def _readable(storage: str):
    """A storage whose tables an older Optuna wrote (2.x) is refused in one line saying how to upgrade it, instead of
    Optuna's traceback."""
    import optuna

    try:
        yield
    except RuntimeError as e:
        found = re.search(r"table schema \(set up by optuna ([^)]+)\)", str(e))
        if found is None:
            raise
        where = storage.removeprefix("sqlite:///")
        if "storage upgrade" in str(e):
            raise ConfigError(
                f"{where} was written by Optuna {found.group(1)}, which Optuna {optuna.__version__} cannot read as "
                f"it is: upgrade it in place with `optuna storage upgrade --storage {storage}` (copy it first to "
                "keep the old one), or set hydra.sweep.dir to a new folder for a new study"
            ) from None
        raise ConfigError(
            f"{where} was written by Optuna {found.group(1)}, newer than this Optuna "
            f"{optuna.__version__}: install that version, or set hydra.sweep.dir to a new "
            "folder"
        ) from None


def open_study(storage: str, name: str, *, create: bool = False, direction: str | None = None, sampler=None):
    """The study `name` in `storage` (created where `create` and missing)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with _readable(storage):
        if create:
            return optuna.create_study(
                study_name=name, storage=storage, sampler=sampler, direction=direction, load_if_exists=True
            )
        return optuna.load_study(study_name=name, storage=storage, sampler=sampler)


def study_names(storage: str) -> list[str]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with _readable(storage):
        return optuna.get_all_study_names(storage)


def make_sampler(config: Mapping[str, Any] | None):
    """The sampler of hydra.sweeper.sampler: its keys are TPESampler's arguments (seed, n_startup_trials, ...), or
    another sampler's with `_target_: optuna.samplers.<Name>` (which Hydra has built already, with the sweeper)."""
    from hydra.utils import instantiate
    from optuna.samplers import BaseSampler

    if isinstance(config, BaseSampler):
        return config
    conf = OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else dict(config or {})
    conf.setdefault("_target_", "optuna.samplers.TPESampler")
    return instantiate(conf)
