"""Config helpers: the repo-root resolver for the YAML files, and value checks with plain-language errors.

Hydra rejects unknown keys and unknown group options itself (configs are in struct mode); this module checks
the values Hydra cannot know are wrong. It imports nothing that imports torch (tests/test_first_line.py), so that
train.py answers a bad value in a second, before torch is imported.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import regnn.schema  # noqa: F401  (also registers the model schemas and names in Hydra's ConfigStore)
from regnn.catalog import ARCH_DEFAULT, arch_name
from regnn.errors import DataError
from regnn.names import (
    ATTN_INITS,
    INPUT_WIDTHS,
    FEATS_TYPES,
    LR_SCHEDULES,
    MONITORS,
    OPTIMIZERS,
    PRECISIONS,
    PROGRESS_MODES,
    dataset_keys,
    is_device_name,
)
from regnn.paths import REPO_ROOT

from regnn.config.checks import (
    MAX_EPOCHS,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_LR,
    MAX_RUNS,
    MAX_SCALE,
    MAX_SEED,
    MAX_THREADS,
    MAX_WIDTH,
    check,
    number,
    stop_on,
)
from regnn.config.minibatch import validate_minibatch, whole_graph_degrees


if not OmegaConf.has_resolver("repo_root"):
    OmegaConf.register_new_resolver("repo_root", lambda: str(REPO_ROOT))
# ${regnn.pick:flag,a,b}: a where flag is true, else b (experiment=compare: tuned cells go to a folder of their own)
if not OmegaConf.has_resolver("regnn.pick"):
    OmegaConf.register_new_resolver("regnn.pick", lambda flag, yes, no: yes if flag else no)
# ${regnn.contains:list,x}: whether x is in list (experiment=compare: the datasets whose cells are the shared pool)
if not OmegaConf.has_resolver("regnn.contains"):
    OmegaConf.register_new_resolver("regnn.contains", lambda seq, x: x in seq)


def graph_folder(dataset) -> str:
    """${regnn.graph_name:${dataset}}: the graph's own name as a folder name (a custom description's `name:`, else
    its folder's name; the dataset's name otherwise), so that two custom graphs never share a folder by default.
    A description that cannot be read gives the dataset's name: the loader then says what is wrong with it."""
    import re

    from regnn.description import graph_name
    from regnn.errors import RegnnError

    ds = OmegaConf.to_container(dataset, resolve=True) if isinstance(dataset, DictConfig) else dict(dataset)
    try:
        name = graph_name(ds)
    except (RegnnError, OSError):
        name = str(ds.get("name"))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or str(ds.get("name"))


if not OmegaConf.has_resolver("regnn.graph_name"):
    OmegaConf.register_new_resolver("regnn.graph_name", graph_folder)


def validate(cfg: DictConfig, backbones=regnn.schema.BACKBONE_KEYS, feats_types=FEATS_TYPES) -> None:
    """Raises ConfigError naming the first bad value and what it should be (DataError for a dataset.path that
    does not exist)."""
    _validate_job(cfg)
    _validate_progress(cfg)
    _validate_model(cfg, backbones)
    _validate_training(cfg)
    if "feats_type" in cfg.dataset:
        ft = str(cfg.dataset.feats_type)
        check(
            ft in feats_types or ft in ("0", "1", "2"),
            "dataset.feats_type",
            ft,
            f"use one of {list(feats_types)} (or the authors' codes 0/1/2)",
        )
    if cfg.get("clustering", {}).get("enabled"):
        number(cfg, "clustering.repeats", lo=1, hi=MAX_RUNS, integer=True)
        number(cfg, "clustering.n_init", lo=1, hi=MAX_RUNS, integer=True)
    check(cfg.logger.name in ("none", "csv", "wandb"), "logger.name", cfg.logger.name, "use none, csv or wandb")
    if "compare" in cfg:  # experiment=compare
        number(cfg, "compare.estimate_epochs", lo=1, hi=100, integer=True)
        if cfg.compare.get("budget") is not None:
            number(cfg, "compare.budget", lo=0, lo_open=True)
    _dataset_keys(cfg.dataset)
    drop = cfg.dataset.get("drop_relations")
    drop = OmegaConf.to_container(drop) if OmegaConf.is_list(drop) else drop
    check(
        drop is None or (isinstance(drop, list) and all(isinstance(x, str) for x in drop)),
        "dataset.drop_relations",
        drop,
        "give a list of relation names, quoted: 'dataset.drop_relations=[\"paper->term\"]' (a reverse goes with it)",
    )


def _validate_job(cfg: DictConfig) -> None:
    """Runs, seeds, threads, device, precision and worker processes."""
    number(cfg, "runs", lo=1, hi=MAX_RUNS, integer=True)
    number(cfg, "seed", lo=0, hi=MAX_SEED, integer=True)
    check(
        cfg.seed + cfg.runs - 1 <= MAX_SEED,
        "seed",
        cfg.seed,
        f"the last run's seed (seed + runs - 1) must be <= {MAX_SEED}",
    )
    f = cfg.get("folds")
    check(
        f is None or (isinstance(f, int) and not isinstance(f, bool) and f >= 2),
        "folds",
        f,
        "use null (the dataset's own split) or a whole number >= 2",
    )
    t = cfg.get("threads")
    check(
        t is None or (isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= MAX_THREADS),
        "threads",
        t,
        f"use null (torch's default: one per core) or a whole number from 1 to {MAX_THREADS}",
    )
    dev = str(cfg.device)
    check(is_device_name(dev), "device", dev, "use auto, cpu, cuda or cuda:N")
    check(
        str(cfg.get("precision", "fp32")) in PRECISIONS,
        "precision",
        cfg.get("precision"),
        f"use {' or '.join(PRECISIONS)}",
    )
    w = cfg.get("workers", 1)
    check(
        w == "auto" or (isinstance(w, int) and not isinstance(w, bool) and 1 <= w <= MAX_THREADS),
        "workers",
        w,
        f"use auto or a whole number from 1 to {MAX_THREADS}",
    )
    if isinstance(w, int) and w > 1:
        check(
            cfg.logger.name == "none",
            "workers",
            w,
            f"the {cfg.logger.name} logger follows one process: use workers=1 with it",
        )
        check(
            cfg.trainer.name != "minibatch",
            "workers",
            w,
            "the mini-batch trainer runs one process per device "
            "under torchrun (docs/scale.md, multi-process training): use workers=1 with it",
        )


def _validate_progress(cfg: DictConfig) -> None:
    p = cfg.get("progress", "auto")
    check(
        isinstance(p, bool) or p in PROGRESS_MODES, "progress", p, f"use true, false or one of {list(PROGRESS_MODES)}"
    )
    if "progress_interval" in cfg:
        number(cfg, "progress_interval", lo=0, lo_open=True)


def _validate_model(cfg: DictConfig, backbones) -> None:
    m = cfg.model
    if "backbone" in m or arch_name(m) == ARCH_DEFAULT:  # the heterogeneous baselines have none
        check(m.backbone in backbones, "model.backbone", m.backbone, f"known backbones: {sorted(backbones)}")
    known = regnn.schema.model_keys(OmegaConf.to_container(m))
    unknown = sorted(set(m) - known)
    check(
        not unknown,
        f"model.{unknown[0] if unknown else ''}",
        m.get(unknown[0]) if unknown else None,
        f"{m.name} has no such key (known: {', '.join(sorted(known))})",
    )
    number(cfg, "model.hidden", lo=1, hi=MAX_WIDTH, integer=True)
    if "num_layers" in m:  # Metapath2vec has none
        number(cfg, "model.num_layers", lo=1, hi=MAX_LAYERS, integer=True)
    for k in (
        "walk_length",
        "window",
        "negatives",
        "walks_per_node",
        "batch_size",
        "relation_dim",
        "semantic_dim",
        "edge_dim",
        "num_channels",
        "attn_vec_dim",
        "emb_dim",
    ):
        if m.get(k) is not None:
            number(cfg, f"model.{k}", lo=1, hi=MAX_WIDTH if k != "batch_size" else None, integer=True)
    if m.get("num_bases") is not None:  # 0: a full matrix per relation (R-GCN's notation; tune_rgcn searches it)
        number(cfg, "model.num_bases", lo=0, hi=MAX_WIDTH, integer=True)
    for k in ("lr", "classifier_c"):
        if k in m:
            number(cfg, f"model.{k}", lo=0, lo_open=True)
    number(cfg, "model.dropout", lo=0, hi=1, hi_open=True)
    if "heads" in m:
        number(cfg, "model.heads", lo=1, hi=MAX_HEADS, integer=True)
    if "attn_init" in m:
        check(m.attn_init in ATTN_INITS, "model.attn_init", m.attn_init, f"use one of {list(ATTN_INITS)}")
    if "residual" in m:  # auto: the attention backbones' only (regnn.spec.ModelSpec.for_data)
        v, auto = m.residual, "backbone" in m
        check(isinstance(v, bool) or (auto and v == "auto"), "model.residual", v, f"use true, false{' or auto' * auto}")
    if "input_width" in m:
        check(m.input_width in (*INPUT_WIDTHS, "auto"), "model.input_width", m.input_width, "use head, layer or auto")
    if "relation" in m:
        number(cfg, "model.relation.scale", lo=0, lo_open=True, hi=MAX_SCALE)
        for k in ("edge_embeddings", "self_loop_embeddings"):
            v = m.relation[k]
            check(isinstance(v, bool), f"model.relation.{k}", v, "must be true or false")


def _validate_training(cfg: DictConfig) -> None:
    o = cfg.optimizer
    check(o.name in OPTIMIZERS, "optimizer.name", o.name, f"use one of {list(OPTIMIZERS)}")
    number(cfg, "optimizer.lr", lo=0, lo_open=True, hi=MAX_LR)
    number(cfg, "optimizer.weight_decay", lo=0, hi=MAX_LR)
    if cfg.trainer.max_epochs is not None or cfg.trainer.name != "minibatch":  # minibatch: null is its default
        number(cfg, "trainer.max_epochs", lo=1, hi=MAX_EPOCHS, integer=True)
    number(cfg, "trainer.patience", lo=1, hi=MAX_EPOCHS, integer=True)
    if "stop_on" in cfg.trainer and cfg.trainer.name != "minibatch":  # the full-batch trainer's
        stop_on(cfg.trainer, [m for m in MONITORS if m != "val_acc"])  # accuracy is Micro-F1 here
        check(
            cfg.trainer.lr_schedule in LR_SCHEDULES,
            "trainer.lr_schedule",
            cfg.trainer.lr_schedule,
            f"use one of {list(LR_SCHEDULES)}",
        )


def _dataset_keys(d: DictConfig) -> None:
    """A `+dataset.<key>` the dataset's loader does not take is refused here, as `+model.<key>` is, not deep in
    the loader; so is a dataset.path that does not exist (the loader would say the same, after importing torch)."""
    known = dataset_keys(str(d.get("format", "magnn")))
    unknown = sorted(set(d) - known)
    check(
        not unknown,
        f"dataset.{unknown[0] if unknown else ''}",
        d.get(unknown[0]) if unknown else None,
        f"dataset {d.get('name')} (format {d.get('format', 'magnn')}) has no such key (known: "
        f"{', '.join(sorted(known))})",
    )
    path = d.get("path") if d.get("format") == "custom" else None
    if path not in (None, "", "???") and not Path(str(path)).expanduser().exists():
        raise DataError(f"dataset.path={path}: no such file or folder")


__all__ = ["graph_folder", "validate", "validate_minibatch", "whole_graph_degrees"]
