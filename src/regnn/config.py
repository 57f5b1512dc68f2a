"""Config helpers: the repo-root resolver for the YAML files, and value checks with plain-language errors.

Hydra rejects unknown keys and unknown group options itself (configs are in struct mode); this module checks
the values Hydra cannot know are wrong.
"""
from __future__ import annotations


from omegaconf import DictConfig, OmegaConf

import regnn.schema  # noqa: F401  (also registers the model schemas and names in Hydra's ConfigStore)
from regnn.catalog import ARCH_DEFAULT, arch_name
from regnn.errors import ConfigError, quote
from regnn.models import ARCHS
from regnn.paths import REPO_ROOT
from regnn.training.device import is_device_name
from regnn.training.options import fanouts_for
from regnn.training.trainer import PRECISIONS


if not OmegaConf.has_resolver("repo_root"):
    OmegaConf.register_new_resolver("repo_root", lambda: str(REPO_ROOT))
# ${regnn.pick:flag,a,b}: a where flag is true, else b (experiment=compare: tuned cells go to a folder of their own)
if not OmegaConf.has_resolver("regnn.pick"):
    OmegaConf.register_new_resolver("regnn.pick", lambda flag, yes, no: yes if flag else no)


def graph_folder(dataset) -> str:
    """${regnn.graph_name:${dataset}}: the graph's own name as a folder name (a custom description's `name:`, else
    its folder's name; the dataset's name otherwise), so that two custom graphs never share a folder by default.
    A description that cannot be read gives the dataset's name: the loader then says what is wrong with it."""
    import re

    from regnn.data.fingerprint import graph_name
    from regnn.errors import RegnnError
    ds = OmegaConf.to_container(dataset, resolve=True) if isinstance(dataset, DictConfig) else dict(dataset)
    try:
        name = graph_name(ds)
    except (RegnnError, OSError):
        name = str(ds.get("name"))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or str(ds.get("name"))


if not OmegaConf.has_resolver("regnn.graph_name"):
    OmegaConf.register_new_resolver("regnn.graph_name", graph_folder)


# upper bounds: a value past these is a typo or a unit slip, and would fail deep inside (an allocation of
# petabytes, a seed numpy cannot take, a loop that never ends) after the run folder was written
MAX_RUNS = 1000
MAX_SEED = 2**31 - 1      # numpy's and torch's seeding both take it; run i uses seed + i
MAX_THREADS = 1024
MAX_WIDTH = 65536         # model.hidden and the like: a (width x width) weight of 16 GB in float32
MAX_HEADS = 64
MAX_LAYERS = 64
MAX_EPOCHS = 1_000_000    # trainer.max_epochs and patience
MAX_LR = 1e4              # optimizer.lr and weight_decay: far past any setting that trains (a run diverges long before)
MAX_SCALE = 1e6           # lambda (model.relation.scale); the paper sweeps 1e-3 to 1e3


def _check(ok: bool, key: str, value, rule: str) -> None:
    if not ok:
        raise ConfigError(f"{key}={quote(value)} is not valid: {rule}")


def _num(cfg, key, lo=None, hi=None, integer=False, lo_open=False, hi_open=False):
    v = OmegaConf.select(cfg, key)
    kind = int if integer else (int, float)
    _check(isinstance(v, kind) and not isinstance(v, bool), key, v,
           "must be " + ("an integer" if integer else "a number"))
    if lo is not None:
        _check(v > lo if lo_open else v >= lo, key, v, f"must be {'>' if lo_open else '>='} {lo}")
    if hi is not None:
        _check(v < hi if hi_open else v <= hi, key, v, f"must be {'<' if hi_open else '<='} {hi}")


def validate(cfg: DictConfig, backbones, feats_types) -> None:
    """Raises ConfigError naming the first bad value and what it should be."""
    _validate_job(cfg)
    _validate_model(cfg, backbones)
    _validate_training(cfg)
    if "feats_type" in cfg.dataset:
        ft = str(cfg.dataset.feats_type)
        _check(ft in feats_types or ft in ("0", "1", "2"), "dataset.feats_type", ft,
               f"use one of {list(feats_types)} (or the authors' codes 0/1/2)")
    if cfg.get("clustering", {}).get("enabled"):
        _num(cfg, "clustering.repeats", lo=1, hi=MAX_RUNS, integer=True)
        _num(cfg, "clustering.n_init", lo=1, hi=MAX_RUNS, integer=True)
    _check(cfg.logger.name in ("none", "csv", "wandb"), "logger.name", cfg.logger.name, "use none, csv or wandb")
    _dataset_keys(cfg.dataset)


def _validate_job(cfg: DictConfig) -> None:
    """Runs, seeds, threads, device, precision and worker processes."""
    _num(cfg, "runs", lo=1, hi=MAX_RUNS, integer=True)
    _num(cfg, "seed", lo=0, hi=MAX_SEED, integer=True)
    _check(cfg.seed + cfg.runs - 1 <= MAX_SEED, "seed", cfg.seed, f"the last run's seed (seed + runs - 1) must be "
           f"<= {MAX_SEED}")
    f = cfg.get("folds")
    _check(f is None or (isinstance(f, int) and not isinstance(f, bool) and f >= 2), "folds", f,
           "use null (the dataset's own split) or a whole number >= 2")
    t = cfg.get("threads")
    _check(t is None or (isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= MAX_THREADS), "threads", t,
           f"use null (torch's default: one per core) or a whole number from 1 to {MAX_THREADS}")
    dev = str(cfg.device)
    _check(is_device_name(dev), "device", dev, "use auto, cpu, cuda or cuda:N")
    _check(str(cfg.get("precision", "fp32")) in PRECISIONS, "precision", cfg.get("precision"),
           f"use {' or '.join(PRECISIONS)}")
    w = cfg.get("workers", 1)
    _check(w == "auto" or (isinstance(w, int) and not isinstance(w, bool) and 1 <= w <= MAX_THREADS), "workers", w,
           f"use auto or a whole number from 1 to {MAX_THREADS}")
    if isinstance(w, int) and w > 1:
        _check(cfg.logger.name == "none", "workers", w, f"the {cfg.logger.name} logger follows one process: "
               "use workers=1 with it")
        _check(cfg.trainer.name != "minibatch", "workers", w, "the mini-batch trainer runs one process per device "
               "under torchrun (docs/scale.md, multi-process training): use workers=1 with it")


def _validate_model(cfg: DictConfig, backbones) -> None:
    m = cfg.model
    if "backbone" in m or arch_name(m) == ARCH_DEFAULT:  # the heterogeneous baselines have none
        _check(m.backbone in backbones, "model.backbone", m.backbone, f"known backbones: {sorted(backbones)}")
    known = regnn.schema.model_keys(OmegaConf.to_container(m))
    unknown = sorted(set(m) - known)
    _check(not unknown, f"model.{unknown[0] if unknown else ''}", m.get(unknown[0]) if unknown else None,
           f"{m.name} has no such key (known: {', '.join(sorted(known))})")
    _num(cfg, "model.hidden", lo=1, hi=MAX_WIDTH, integer=True)
    if "num_layers" in m:  # Metapath2vec has none
        _num(cfg, "model.num_layers", lo=1, hi=MAX_LAYERS, integer=True)
    for k in ("walk_length", "window", "negatives", "walks_per_node", "batch_size", "relation_dim", "semantic_dim",
              "edge_dim", "num_bases", "num_channels", "attn_vec_dim", "emb_dim"):
        if m.get(k) is not None:
            _num(cfg, f"model.{k}", lo=1, hi=MAX_WIDTH if k != "batch_size" else None, integer=True)
    for k in ("lr", "classifier_c"):
        if k in m:
            _num(cfg, f"model.{k}", lo=0, lo_open=True)
    _num(cfg, "model.dropout", lo=0, hi=1, hi_open=True)
    if "heads" in m:
        _num(cfg, "model.heads", lo=1, hi=MAX_HEADS, integer=True)
    if "relation" in m:
        _num(cfg, "model.relation.scale", lo=0, lo_open=True, hi=MAX_SCALE)
        for k in ("edge_embeddings", "self_loop_embeddings"):
            v = m.relation[k]
            _check(isinstance(v, bool), f"model.relation.{k}", v, "must be true or false")


def _validate_training(cfg: DictConfig) -> None:
    o = cfg.optimizer
    from regnn.training.trainer import OPTIMIZERS
    _check(o.name in OPTIMIZERS, "optimizer.name", o.name, f"use one of {list(OPTIMIZERS)}")
    _num(cfg, "optimizer.lr", lo=0, lo_open=True, hi=MAX_LR)
    _num(cfg, "optimizer.weight_decay", lo=0, hi=MAX_LR)
    if cfg.trainer.max_epochs is not None or cfg.trainer.name != "minibatch":  # minibatch: null is its default
        _num(cfg, "trainer.max_epochs", lo=1, hi=MAX_EPOCHS, integer=True)
    _num(cfg, "trainer.patience", lo=1, hi=MAX_EPOCHS, integer=True)
    if "stop_on" in cfg.trainer and cfg.trainer.name != "minibatch":  # the full-batch trainer's
        from regnn.training.early_stopping import MONITORS
        from regnn.training.trainer import LR_SCHEDULES
        _stop_on(cfg.trainer, [m for m in MONITORS if m != "val_acc"])  # accuracy is Micro-F1 here
        _check(cfg.trainer.lr_schedule in LR_SCHEDULES, "trainer.lr_schedule", cfg.trainer.lr_schedule,
               f"use one of {list(LR_SCHEDULES)}")


def _stop_on(t: DictConfig, known: list[str]) -> None:
    """trainer.stop_on: a list of one or more of the trainer's known monitors."""
    stop = OmegaConf.to_container(t.stop_on) if OmegaConf.is_list(t.stop_on) else t.stop_on
    _check(isinstance(stop, list) and stop and all(m in known for m in stop), "trainer.stop_on", stop,
           f"must be a list of one or more of {known} (each must improve for an epoch to count as the best)")


def _dataset_keys(d: DictConfig) -> None:
    """A `+dataset.<key>` the dataset's loader does not take is refused here, as `+model.<key>` is, not deep in
    the loader."""
    from regnn.data import dataset_keys

    known = dataset_keys(str(d.get("format", "magnn")))
    unknown = sorted(set(d) - known)
    _check(not unknown, f"dataset.{unknown[0] if unknown else ''}", d.get(unknown[0]) if unknown else None,
           f"dataset {d.get('name')} (format {d.get('format', 'magnn')}) has no such key (known: "
           f"{', '.join(sorted(known))})")


# -- trainer=minibatch: checks of the mini-batch trainer's values -------------------------------------------
# backbones whose layers run on sampled blocks: GIN and MixHop normalise by whole-graph degrees, GATv2 has only
# the authors' full-batch stack (refused with its own reason)
MINIBATCH_BACKBONES = ("gcn", "gat", "sage", "mlp")


def validate_minibatch(cfg: DictConfig, eval_modes) -> None:
    """The mini-batch trainer's values, and the model settings it cannot run with."""
    t, m = cfg.trainer, cfg.model
    arch = arch_name(m)
    sampled = getattr(ARCHS.get(arch), "sampled", None)  # the registry's build on sampled blocks
    _check(sampled is not None, "model.arch", arch, f"trainer=minibatch trains the RE-GNN stacks only, not the "
           f"heterogeneous baseline {m.name}: train it with trainer=fullbatch")
    if m.get("backbone") in ("gat", "gatv2"):
        _check(m.backbone == "gat", "model.backbone", m.backbone, "trainer=minibatch has GAT layers one per "
               "sampled hop (layout=stack) for gat only; gatv2 has the authors' full-batch stack alone: use a gat "
               "model, or trainer=fullbatch")
        _check(m.get("layout", "authors") == "stack", "model.layout", m.get("layout", "authors"),
               "the authors' attention stack applies its last layer twice, one call more than sampled hops: "
               "use model.layout=stack with trainer=minibatch (conf/layout/minibatch_gat.yaml sets it)")
    _check(m.backbone in MINIBATCH_BACKBONES, "model.backbone", m.backbone,
           f"trainer=minibatch runs {', '.join(MINIBATCH_BACKBONES)} layers on sampled blocks; {m.backbone} layers "
           f"need the whole graph (gin: the authors' full-batch stack only; mixhop: whole-graph source degrees): train "
           f"model={m.name} with "
           "trainer=fullbatch")
    fan = OmegaConf.to_container(t.fanouts) if OmegaConf.is_list(t.fanouts) else t.fanouts
    _check(_fanout(t.default_fanout), "trainer.default_fanout", t.default_fanout,
           "must be a positive integer, or -1 (every neighbour)")
    if fan is None:
        fan = list(fanouts_for(None, m.num_layers, t.default_fanout))
    _check(isinstance(fan, list) and fan and all(_fanout(f) for f in fan),
           "trainer.fanouts", fan, "must be a list of positive integers (or -1: every neighbour), input layer first")
    _check(len(fan) == m.num_layers, "trainer.fanouts", fan,
           f"needs one fanout per model layer (model.num_layers={m.num_layers})")
    if t.eval_fanouts is not None:
        ef = OmegaConf.to_container(t.eval_fanouts)
        _check(isinstance(ef, list) and len(ef) == len(fan) and all(_fanout(f) for f in ef),
               "trainer.eval_fanouts", ef, f"must be null or {len(fan)} positive integers (or -1)")
    for k in ("batch_size", "eval_batch_size"):
        _num(cfg, f"trainer.{k}", lo=1, integer=True)
    if t.embed_dim is not None:
        _num(cfg, "trainer.embed_dim", lo=1, integer=True)
    for k in ("num_workers", "log_every", "patience_steps", "min_steps"):
        _num(cfg, f"trainer.{k}", lo=0, integer=True)
    if t.max_batches is not None:
        _num(cfg, "trainer.max_batches", lo=1, integer=True)
    _num(cfg, "trainer.embed_lr", lo=0, lo_open=True)
    _check(t.eval in eval_modes, "trainer.eval", t.eval, f"use one of {list(eval_modes)}")
    from regnn.training.early_stopping import MONITORS
    _stop_on(t, list(MONITORS))
    from regnn.training.sampling import SAMPLING_MODES
    _check(t.sampling in SAMPLING_MODES, "trainer.sampling", t.sampling,
           "use deterministic (each batch sampled when needed) or parallel (sampled ahead in threads)")
    _check(isinstance(t.profile, bool), "trainer.profile", t.profile, "use true or false")
    _check(t.ddp_backend in ("auto", "gloo", "nccl"), "trainer.ddp_backend", t.ddp_backend, "use auto, gloo or nccl")


def _fanout(f) -> bool:
    """A fanout: a positive number of neighbours, or -1 (every one)."""
    return isinstance(f, int) and not isinstance(f, bool) and (f > 0 or f == -1)


def whole_graph_degrees(m: DictConfig) -> bool:
    """Whether a model's layers weigh a sampled block by its sources' whole-graph degrees: GCN with norm=both,
    and the released GraphSAGE (it divides every message by its source's weighted degree)."""
    return m.get("norm") == "both" or m.get("backbone") == "sage"

