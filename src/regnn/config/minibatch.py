"""Checks of trainer=minibatch: its values, and the model settings the mini-batch trainer cannot run with."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from regnn.catalog import arch_name
from regnn.config.checks import check, number, stop_on
from regnn.names import INPUT_DROPOUT, MONITORS, SAMPLING_MODES
from regnn.training.options import fanouts_for

# -- trainer=minibatch: checks of the mini-batch trainer's values -------------------------------------------
# backbones whose layers run on sampled blocks: GIN and MixHop normalise by whole-graph degrees, GATv2 has only
# the authors' full-batch stack (refused with its own reason)
MINIBATCH_BACKBONES = ("gcn", "gat", "sage", "mlp")


def validate_minibatch(cfg: DictConfig, eval_modes) -> None:
    """The mini-batch trainer's values, and the model settings it cannot run with."""
    _model_on_blocks(cfg.model)
    _fanouts(cfg.trainer, cfg.model)
    _trainer_values(cfg, eval_modes)


def _model_on_blocks(m: DictConfig) -> None:
    """A model whose layers run on sampled blocks: an RE-GNN stack of a backbone that has them."""
    from regnn.models import ARCHS  # torch: imported where a mini-batch config is checked, after the others

    arch = arch_name(m)
    sampled = getattr(ARCHS.get(arch), "sampled", None)  # the registry's build on sampled blocks
    check(
        sampled is not None,
        "model.arch",
        arch,
        f"trainer=minibatch trains the RE-GNN stacks only, not the "
        f"heterogeneous baseline {m.name}: train it with trainer=fullbatch",
    )
    if m.get("backbone") in ("gat", "gatv2"):
        check(
            m.backbone == "gat",
            "model.backbone",
            m.backbone,
            "trainer=minibatch has GAT layers one per "
            "sampled hop (layout=stack) for gat only; gatv2 has the authors' full-batch stack alone: use a gat "
            "model, or trainer=fullbatch",
        )
        check(
            m.get("layout", "authors") == "stack",
            "model.layout",
            m.get("layout", "authors"),
            "the authors' attention stack applies its last layer twice, one call more than sampled hops: "
            "use model.layout=stack with trainer=minibatch (conf/layout/minibatch_gat.yaml sets it)",
        )
    check(
        m.backbone in MINIBATCH_BACKBONES,
        "model.backbone",
        m.backbone,
        f"trainer=minibatch runs {', '.join(MINIBATCH_BACKBONES)} layers on sampled blocks; {m.backbone} layers "
        f"need the whole graph (gin: the authors' full-batch stack only; mixhop: whole-graph source degrees): train "
        f"model={m.name} with "
        "trainer=fullbatch",
    )


def _fanouts(t: DictConfig, m: DictConfig) -> None:
    """trainer.fanouts (one per model layer) and trainer.eval_fanouts."""
    fan = OmegaConf.to_container(t.fanouts) if OmegaConf.is_list(t.fanouts) else t.fanouts
    check(
        _fanout(t.default_fanout),
        "trainer.default_fanout",
        t.default_fanout,
        "must be a positive integer, or -1 (every neighbour)",
    )
    if fan is None:
        fan = list(fanouts_for(None, m.num_layers, t.default_fanout))
    check(
        isinstance(fan, list) and fan and all(_fanout(f) for f in fan),
        "trainer.fanouts",
        fan,
        "must be a list of positive integers (or -1: every neighbour), input layer first",
    )
    check(
        len(fan) == m.num_layers,
        "trainer.fanouts",
        fan,
        f"needs one fanout per model layer (model.num_layers={m.num_layers})",
    )
    if t.eval_fanouts is not None:
        ef = OmegaConf.to_container(t.eval_fanouts)
        check(
            isinstance(ef, list) and len(ef) == len(fan) and all(_fanout(f) for f in ef),
            "trainer.eval_fanouts",
            ef,
            f"must be null or {len(fan)} positive integers (or -1)",
        )


def _trainer_values(cfg: DictConfig, eval_modes) -> None:
    """Batch sizes, step counts, the evaluation, the stopping rule, the sampling mode and the DDP backend."""
    t = cfg.trainer
    for k in ("batch_size", "eval_batch_size"):
        number(cfg, f"trainer.{k}", lo=1, integer=True)
    if t.embed_dim is not None:
        number(cfg, "trainer.embed_dim", lo=1, integer=True)
    for k in ("num_workers", "log_every", "patience_steps", "min_steps"):
        number(cfg, f"trainer.{k}", lo=0, integer=True)
    if t.max_batches is not None:
        number(cfg, "trainer.max_batches", lo=1, integer=True)
    number(cfg, "trainer.embed_lr", lo=0, lo_open=True)
    check(t.eval in eval_modes, "trainer.eval", t.eval, f"use one of {list(eval_modes)}")
    check(
        t.input_dropout in INPUT_DROPOUT, "trainer.input_dropout", t.input_dropout, f"use one of {list(INPUT_DROPOUT)}"
    )
    stop_on(t, list(MONITORS))
    check(
        t.sampling in SAMPLING_MODES,
        "trainer.sampling",
        t.sampling,
        "use deterministic (each batch sampled when needed) or parallel (sampled ahead in threads)",
    )
    check(isinstance(t.profile, bool), "trainer.profile", t.profile, "use true or false")
    check(t.ddp_backend in ("auto", "gloo", "nccl"), "trainer.ddp_backend", t.ddp_backend, "use auto, gloo or nccl")


def _fanout(f) -> bool:
    """A fanout: a positive number of neighbours, or -1 (every one)."""
    return isinstance(f, int) and not isinstance(f, bool) and (f > 0 or f == -1)


def whole_graph_degrees(m: DictConfig) -> bool:
    """Whether a model's layers weigh a sampled block by its sources' whole-graph degrees: GCN with norm=both,
    and the released GraphSAGE (it divides every message by its source's weighted degree)."""
    return m.get("norm") == "both" or m.get("backbone") == "sage"
