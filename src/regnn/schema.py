"""Structured schemas of the model configs, and the model names of the relation group, in Hydra's ConfigStore.

Every model config merges onto a schema (`defaults: - /schema/model/<name>@_here_`), so a key the model does
not take, misspelt in a YAML file or on the command line, fails at composition with Hydra's message
(`Key 'hiden' not in 'gcn'`). The keys of a backbone with relation weights are REGNN's (MODEL_KEYS) plus its
builder's keyword arguments (regnn.models.backbones), listed in BACKBONE_KEYS: this module is read before torch
is imported, so that a misspelt key is answered at once, and a test holds the table equal to the builders'
signatures (a new builder fails it until its keys are added here).
Fields are untyped (values are checked by regnn.config.validate) and have no defaults: the YAML files hold every
value, so the composed config has exactly the keys its files give.

For every config in conf/backbone/ and every relation setting (conf/relation/) the model name of
regnn.catalog (re_gcn, gcn, gcn_e, gcn_s, ...) is a node in the `model` group that selects both, so
`model=re_gcn` and `model=gcn relation=re` compose the same config.
"""

from __future__ import annotations

import inspect
from dataclasses import field, make_dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from regnn import catalog

# model.relation's keys: the fields of regnn.core.relation.Relation
RELATION_KEYS = ("edge_embeddings", "self_loop_embeddings", "scale", "negative_slope")
MODEL_KEYS = ("name", "backbone", "hidden", "num_layers", "dropout", "double_dropout")  # REGNN's own
BUILDER_ARGS = ("shape",)  # given by REGNN (hidden, num_classes, num_layers), not by the config
# GAT's and GATv2's builders' keys (GAT's stack layout adds its LayerNorm)
GAT_KEYS = (
    "heads",
    "activation",
    "attn_dropout",
    "attn_negative_slope",
    "attn_init",
    "residual",
    "input_width",
    "layout",
)
# backbone -> builder_keys(regnn.models.backbones.BACKBONES[backbone]), in the builder's order
BACKBONE_KEYS = {
    "gcn": ("activation", "norm", "layout", "layer_norm"),
    "gat": (*GAT_KEYS, "layer_norm"),
    "sage": ("activation",),
    "gin": ("activation", "mlp_dropout"),
    "gatv2": GAT_KEYS,
    "mixhop": ("activation", "powers"),
    "mlp": ("activation",),
    "appnp": ("activation", "steps", "teleport", "norm"),
}
LAYOUT_KEYS = {"gcn": ("layout", "layer_norm"), "gat": ("layer_norm",)}  # only in conf/layout/ (the stack layout)
MAGNN_KEYS = (
    "name",
    "arch",
    "metapaths",
    "max_instances",
    "sample_seed",
    "hidden",
    "heads",
    "num_layers",
    "attn_vec_dim",
    "dropout",
    "encoder",
)
BASELINE_KEYS = {  # the models outside the relation group (regnn.models.baselines)
    "rgcn": ("name", "arch", "hidden", "num_layers", "dropout", "num_bases"),
    "hgt": ("name", "arch", "hidden", "heads", "num_layers", "dropout", "use_norm", "variant"),
    "simple_hgn": (
        "name",
        "arch",
        "hidden",
        "heads",
        "num_layers",
        "edge_dim",
        "dropout",
        "attn_dropout",
        "negative_slope",
        "beta",
        "residual",
    ),
    "han": ("name", "arch", "metapaths", "hidden", "heads", "num_layers", "dropout", "semantic_dim"),
    "gtn": ("name", "arch", "hidden", "num_channels", "num_layers", "dropout", "select_lr_scale"),
    "metapath2vec": (
        "name",
        "arch",
        "metapaths",
        "metapath",
        "metapath_select_runs",
        "hidden",
        "walk_length",
        "window",
        "negatives",
        "walks_per_node",
        "batch_size",
        "lr",
        "classifier_c",
        "dropout",
    ),
    "rhgnn": ("name", "arch", "hidden", "heads", "relation_dim", "num_layers", "dropout", "residual", "norm"),
    "magnn": MAGNN_KEYS,
    "magnn_ac": MAGNN_KEYS + ("emb_dim", "feats_drop_rate", "loss_lambda"),
}
METAPATH_KEYS = ("arch", "metapaths", "metapath", "metapath_select_runs")  # GCN-M, GAT-M on a backbone's keys


def _fields(keys):
    return [(k, Any, field(default=MISSING)) for k in keys]


RelationKeys = make_dataclass("relation", _fields(RELATION_KEYS))  # model.relation in the structured schema


def _schema(name: str, keys, relation=None, bases=()) -> type:
    extra = [("relation", relation, field(default_factory=relation))] if relation else []
    return make_dataclass(name, _fields(keys) + extra, bases=bases)


def builder_keys(builder) -> tuple[str, ...]:
    """The config keys a backbone builder takes: its keyword arguments but those REGNN passes itself."""
    params = inspect.signature(builder).parameters.values()
    return tuple(p.name for p in params if p.name not in BUILDER_ARGS and p.kind is not p.VAR_KEYWORD)


def schemas() -> dict[str, type]:
    out = {}
    for b, own in BACKBONE_KEYS.items():
        base = MODEL_KEYS if b != "mlp" else tuple(k for k in MODEL_KEYS if k != "double_dropout")
        out[b] = _schema(b, base + tuple(k for k in own if k not in LAYOUT_KEYS.get(b, ())), relation=RelationKeys)
        if b in LAYOUT_KEYS:
            out[f"{b}_stack"] = _schema(f"{b}_stack", LAYOUT_KEYS[b], bases=(out[b],))
    for b in ("gcn", "gat"):
        out[f"metapath_{b}"] = _schema(f"metapath_{b}", METAPATH_KEYS, bases=(out[b],))
    out |= {name: _schema(name, keys) for name, keys in BASELINE_KEYS.items()}
    return out


def model_keys(model: dict) -> set[str]:
    """The keys a composed model config may hold: its schema's, where the model names one (a `+model.<key>`
    override bypasses the composition check, so validation asks this)."""
    arch = catalog.arch_name(model)
    if arch in BASELINE_KEYS:
        return set(BASELINE_KEYS[arch])
    b = model.get("backbone")
    if b not in BACKBONE_KEYS:
        return set(model)  # an unknown backbone: validation names that first
    keys = set(MODEL_KEYS) | set(BACKBONE_KEYS[b]) | set(LAYOUT_KEYS.get(b, ())) | {"relation"}
    return keys | set(METAPATH_KEYS) if arch == "metapath_gnn" else keys


def register(cs: ConfigStore | None = None) -> None:
    cs = cs or ConfigStore.instance()
    for name, schema in schemas().items():
        cs.store(group="schema/model", name=name, node=schema)
    for backbone in catalog.backbones():
        for relation in catalog.RELATIONS:
            cs.store(
                group="model",
                name=catalog.model_name(backbone, relation),
                node={
                    "defaults": [
                        {"override /backbone@_global_.backbone": backbone},
                        {"override /relation@_global_.relation": relation},
                    ]
                },
            )
    if not OmegaConf.has_resolver("models"):  # sweeper lists: ${models:plain+re} -> gcn,re_gcn,gat,re_gat,...
        OmegaConf.register_new_resolver("models", lambda relations: ",".join(catalog.models(relations)))
        OmegaConf.register_new_resolver(
            "datasets",
            lambda which: ",".join(catalog.FIGURE3_DATASETS if which == "figure3" else catalog.PAPER_DATASETS),
        )


register()
