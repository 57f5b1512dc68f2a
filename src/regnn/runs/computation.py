"""What a cell's config computes, as configs of any age spell it: the settings a resumed cell compares with the
config.yaml it stored. Keys that later versions added compare equal to their absence where their default computes
what configs without them did, so a cell trained before an option existed is still reused."""

from __future__ import annotations

import logging
from pathlib import Path

from regnn.errors import ConfigError
from regnn.runs import config_files

log = logging.getLogger("regnn")

# the parts of a config that decide what a run computes (paths, logging and resume do not)
COMPUTE_KEYS = (
    "dataset",
    "model",
    "optimizer",
    "trainer",
    "seed",
    "runs",
    "deterministic",
    "clustering",
    "precision",
    "folds",
)


def computation(config: dict) -> dict:
    """The settings of a resolved config that decide what it computes, as configs of any age spell them."""
    c = {k: config.get(k) for k in COMPUTE_KEYS}
    c["precision"] = c["precision"] or "fp32"  # configs written before the option existed ran in float32
    # meta-paths: in model.metapaths where used
    c["dataset"] = {k: v for k, v in (c["dataset"] or {}).items() if k not in ("dir", "path", "verify", "metapaths")}
    if c["dataset"].get("feature_norm", "none") == "none":  # the default computes what configs without the key did
        c["dataset"].pop("feature_norm", None)
    for key in ("drop_relations", "shares", "through"):  # empty: the graph of configs without the key
        if not c["dataset"].get(key, True):
            c["dataset"].pop(key, None)
    if isinstance(c["trainer"], dict):  # the defaults compute what configs without these keys did
        t = dict(c["trainer"])
        if list(t.get("stop_on", ["val_loss"])) == ["val_loss"]:
            t.pop("stop_on", None)
        if t.get("lr_schedule", "constant") == "constant":
            t.pop("lr_schedule", None)
        if t.get("input_dropout", "projected") == "projected":
            t.pop("input_dropout", None)
        c["trainer"] = t
    rel = c["model"].get("relation") if isinstance(c["model"], dict) else None
    if isinstance(rel, dict) and not rel.get("edge_embeddings") and not rel.get("self_loop_embeddings"):
        # no relation weights: lambda and tau's slope compute nothing (MLP configs once had no slope)
        c["model"] = {**c["model"], "relation": {k: v for k, v in rel.items() if k not in ("scale", "negative_slope")}}
    if isinstance(c["clustering"], dict) and "n_init" not in c["clustering"]:
        c["clustering"] = {**c["clustering"], "n_init": 1}  # configs before the option clustered with one start
    if isinstance(c["model"], dict) and c["model"].get("variant", "dgl") == "dgl" and c["model"].get("arch") == "hgt":
        c["model"] = {k: v for k, v in c["model"].items() if k != "variant"}  # DGL's HGTConv: before the option
    for key, before in (("attn_init", "xavier"), ("input_width", "head")):  # the authors' ways: before the options
        if isinstance(c["model"], dict) and c["model"].get(key, before) == before:
            c["model"] = {k: v for k, v in c["model"].items() if k != key}
    if isinstance(c["model"], dict) and c["model"].get("metapath_select_runs", 0) is None:
        c["model"] = {k: v for k, v in c["model"].items() if k != "metapath_select_runs"}  # unset = before it existed
    return c


def stored_config(out_dir: Path) -> dict | None:
    """The config.yaml an earlier training of out_dir wrote, or None when there is none, or it is empty or
    unreadable (a write cut short): then there is nothing to compare with."""
    path = out_dir / "config.yaml"
    try:
        stored = config_files.read(path, resolve=False) if path.stat().st_size else None
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001  (yaml and omegaconf raise their own errors for damaged text)
        stored = None
    if not isinstance(stored, dict) or not stored:
        log.warning("%s is empty or unreadable; treated as absent", path)
        return None
    return stored


def check_same_computation(config: dict, out_dir: Path) -> int | None:
    """A resumed cell must have been computed with the same settings; say which differ otherwise.

    Returns None when they agree (or nothing is stored), or the stored number of runs when only `runs` differs
    and more are asked for now: the cell is then extended, its finished runs kept (see CellStore.reused_run).
    """
    stored = stored_config(out_dir)
    if stored is None:
        return None
    stored = computation(stored)
    now = computation(config)
    diff = [k for k in COMPUTE_KEYS if stored.get(k) != now.get(k)]
    if diff == ["runs"] and int(now["runs"]) > int(stored["runs"]):
        return int(stored["runs"])
    if diff:
        raise ConfigError(
            f"{out_dir} holds results computed with other settings ({', '.join(diff)} differ); "
            "move that directory away or choose another experiment directory"
        )
    return None


def kept_summary(cell: Path, runs: int) -> Path:
    """Where a cell extended to more runs keeps the summary of its first `runs` (see CellStore._finished)."""
    return cell / f"results.{runs}runs.json"
