"""config.yaml read and written as plain data, the way OmegaConf reads and writes it (its YAML reads 1e-3 as a
number, PyYAML's as a string). The one module of regnn.runs that touches OmegaConf: the pipeline hands the layers
below it the config resolved into plain dicts and lists, never a DictConfig."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf


def read(path: Path, resolve: bool = True):
    """The file's contents as plain data (interpolations resolved, or kept as written); OmegaConf's and YAML's
    errors as they come, for the caller to judge."""
    return OmegaConf.to_container(OmegaConf.load(path), resolve=resolve)


def dumps(config: dict) -> str:
    """config.yaml's text for a resolved config: what OmegaConf.to_yaml writes for the config it came from."""
    return OmegaConf.to_yaml(OmegaConf.create(config))
