"""The tune's settings as configs: the tuned groups a trial starts from, the searched values, and the chosen
setting written back as a conf/tuned-style file (best.yaml)."""

from __future__ import annotations

import logging
from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf

from regnn.paths import REPO_ROOT
from regnn.runs.io_safe import write_text


log = logging.getLogger("regnn")
# overrides that may change between a tune and its resumption (how long and where it runs, not what it computes)
FREE_OVERRIDES = (
    "experiment=",
    "tune.trials=",
    "tune.final_runs=",
    "tune.finalists=",
    "tune.finalist_seeds=",
    "hydra.",
    "threads=",
    "workers=",
    "device=",
)


def _nested(flat: dict) -> dict:
    """{"optimizer.lr": 0.01} -> {"optimizer": {"lr": 0.01}} (a searched key's +/++ prefix dropped)."""
    out: dict = {}
    for key, value in flat.items():
        *parents, leaf = key.lstrip("+").split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def tuned_groups(train_yaml: Path = REPO_ROOT / "conf" / "train.yaml") -> list[str]:
    """The config groups of tuned settings, in the order conf/train.yaml's defaults list merges them (a later one
    wins where two set the same key)."""
    groups = []
    for entry in OmegaConf.to_container(OmegaConf.load(train_yaml).defaults):
        if isinstance(entry, dict):
            group = next(iter(entry)).removeprefix("optional ").strip()
            if group == "tuned" or group.startswith("tuned/"):
                groups.append(group)
    return groups


def tuned_settings(choices, conf: Path = REPO_ROOT / "conf") -> dict:
    """The settings of the tuned files a trial composed (its Hydra choices), merged as its config merged them: the
    settings a trial starts from. A tuned file is settings only (no defaults list: tests/test_config.py)."""
    merged = OmegaConf.create()
    for group in tuned_groups(conf / "train.yaml"):
        path = conf / group / f"{choices.get(group)}.yaml"
        if choices.get(group) and path.is_file():  # the groups are optional: a missing file sets nothing
            merged = OmegaConf.merge(merged, OmegaConf.load(path))
    return OmegaConf.to_container(merged)


def plain_value(v):
    return v.item() if hasattr(v, "item") else v


def configured_value(config: DictConfig, name: str):
    """The value a searched key has without the tune (a config group: its chosen option), or None."""
    key = name.lstrip("+~")
    choices = config.hydra.runtime.choices
    if key in choices:
        return choices[key]
    value = OmegaConf.select(config, key, default=None)
    return value if isinstance(value, (str, int, float, bool)) else None


def space_json(space: dict) -> dict:
    from optuna.distributions import distribution_to_json

    return {k: distribution_to_json(d) for k, d in space.items()}


def write_best(sweep: Path, params: dict, base: dict, how: str, defaults: list | None = None) -> Path:
    """<sweep>/tuned/best.yaml: the settings the trials started from (conf/tuned) with the chosen trial's on top;
    `how` (its header) says which trial it is and why it was chosen."""
    merged = OmegaConf.to_container(OmegaConf.merge(base, _nested({k: plain_value(v) for k, v in params.items()})))
    if defaults:
        merged = {"defaults": [*defaults, "_self_"], **merged}
    path = sweep / "tuned" / "best.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(
        path,
        f"# @package _global_\n# Chosen by the tune in {sweep}: {how}.\n#   python train.py --config-dir "
        f"{sweep} tuned=best ...   (or copy it into conf/tuned/)\n" + yaml.safe_dump(merged, sort_keys=True),
    )
    return path
