"""The paper's reported numbers (resources/paper_numbers.yaml), for tables that compare against them."""

from __future__ import annotations

import functools
from importlib import resources

import yaml


@functools.lru_cache(maxsize=None)
def paper_numbers() -> dict:
    return yaml.safe_load(resources.files("regnn").joinpath("resources/paper_numbers.yaml").read_text())


def reported(table: str, dataset: str, model: str, metric: str):
    """(value, std) reported in the paper, or (None, None) where it gives none."""
    row = paper_numbers().get(table, {}).get(dataset, {}).get(model, {})
    return row.get(metric), row.get(f"{metric}_std")
