"""predict.py: a trained run's predictions for every target node, labelled or not.

The run's model is rebuilt from its cell's config.yaml through the same builders train.py used, its best-validation
weights read from runs/run_XX/model.pt (tensors only), and applied to the graph it was trained on, or to a graph of
the same schema with more nodes and edges (dataset_path). The labelled splits are scored as the run scored them
when it trained: the printed test Micro-F1 is its results.json's, which tests the checkpoint.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf

from regnn.names import SPLITS
from regnn.errors import DataError
from regnn.evaluation.metrics import split_scores
from regnn.data.dataset import empty_splits_allowed
from regnn.data.graph_binding import Aligned, within_reach
from regnn.data.table_columns import applying
from regnn.pipeline import graph_check
from regnn.pipeline import predict_guard as guard
from regnn.pipeline.run_choice import Chosen, choose_runs
from regnn.pipeline.from_config import device_of, load_data
from regnn.pipeline.fullbatch import DeviceGraph
from regnn.data.relation_graph import relation_ends
from regnn.pipeline.node_reasons import Reasons, explain_columns, reasons
from regnn.pipeline.trained_model import check_fits, loaded_model, model_logits
from regnn.runs import checkpoint, column_file, embeddings, io_safe
from regnn.training.progress import clock

log = logging.getLogger("regnn")


def graph_as_trained(cfg: DictConfig, run_dir: Path) -> Bound:
    """The graph bound to the model of run_dir by name (regnn.data.graph_record: nodes by id in the trained order,
    classes by name, feature columns by name), its table columns encoded and its features scaled as the run
    trained (the column encoders and dataset.feature_norm's statistics: fitted on the training graph and saved
    beside the model, never refitted on this one), and what differs from the graph the run trained on."""
    meta = checkpoint.load_meta(run_dir)
    aligned = None
    # predictions are for unlabelled nodes: a graph may have none labelled; its table columns are encoded by the
    # encoders the run fitted on its training nodes (encoders.json), never refitted on this graph
    with empty_splits_allowed(), applying(column_file.load(run_dir, meta)):
        if "feature_scaling" not in meta:  # a model saved without its scaling: the configured one, fitted here
            data = load_data(cfg.dataset)
        else:
            data, aligned = checkpoint.bind(
                run_dir, meta, load_data(OmegaConf.merge(cfg.dataset, {"feature_norm": None}))
            )
    no_label = data.unlabelled is not None and bool(data.unlabelled.all())
    if no_label and data.num_classes < int(meta["schema"]["num_classes"]):  # its labels cannot tell: the model's
        data.num_classes = int(meta["schema"]["num_classes"])
    return Bound(data, aligned)


@dataclass
class Bound:
    """A graph bound to a trained model (aligned: None for a model saved before runs kept their graph record, or
    a graph of another schema, which the schema check then names)."""

    data: object
    aligned: Aligned | None


def predictions_frame(data, probs: torch.Tensor, shares=None, aligned=None, reasons=None) -> pd.DataFrame:
    """One row per target node: its id (the user's own where the data has one, else its position), split, label
    and predicted class (by name where the classes have names, -1 / empty: unlabelled), the probabilities, and
    where the graph's table columns were encoded, which of them hold a value the encoders never saw in training
    (unseen_values: ";"-joined column names, empty for none), and where the graph is bound to the model's record
    whether the model never saw the node (new_node) and how many of its in-neighbours it never saw
    (new_neighbours)."""
    pred = probs.argmax(1).numpy()
    labels = data.known_labels()
    ids = embeddings.user_ids(data)
    df = pd.DataFrame({"node": np.arange(len(pred)) if ids is None else ids, "split": embeddings.split_names(data)})
    names = data.class_names
    if names:
        df["label"] = [names[y] if y >= 0 else "" for y in labels]
        df["predicted"] = [names[y] for y in pred]
    else:
        df["label"], df["predicted"] = np.where(labels >= 0, labels, -1), pred
    for c in range(probs.shape[1]):
        df[f"p_{names[c] if names else c}"] = probs[:, c].numpy()
    if data.unseen is not None and data.target in data.unseen:  # columns holding a value training never saw
        df["unseen_values"] = data.unseen[data.target]
    if aligned is not None:
        df["new_node"], df["new_neighbours"] = aligned.new_node, aligned.new_neighbours
        if aligned.in_reach is not None:
            df["new_in_reach"] = aligned.in_reach
    if shares is not None or reasons is not None:  # explain=true: why each node got its class
        explain_columns(df, data, shares, reasons)
    return df


def run_shares(job, tcfg, run_dir) -> tuple[list[str], torch.Tensor] | None:
    """(relation names, each target node's share of every relation) of the run's model (node_shares); None where
    its last layer is not GCN-style, whose aggregate does not split by relation."""
    from regnn.pipeline.node_shares import gcn_style, node_shares

    model, _ = loaded_model(job, tcfg, run_dir, "fullbatch")
    return (list(model.relation_names), node_shares(model, job.inputs, job.feats)) if gcn_style(model) else None


def weight_frame(p: Predicted) -> pd.DataFrame:
    """One row per run, layer (from 1, as explain's weights.csv and the paper's Figure 7) and relation
    (self:<type>: a node type's self-loop), its source and destination node types (a user's relation `buys` names
    neither), and the learned weight (a list where the layer has several heads)."""
    ends = relation_ends(p.data.graph)
    rows = [
        {"run": run, "layer": layer, "relation": rel, "source": ends.get(rel, (None, None))[0]}
        | {"destination": ends.get(rel, (None, None))[1], "weight": w}
        for run, layers in p.weights.items()
        for layer, weights in enumerate(layers or [], start=1)
        for rel, w in weights.items()
    ]
    return pd.DataFrame(rows, columns=["run", "layer", "relation", "source", "destination", "weight"])


def scores(data, logits: torch.Tensor) -> dict[str, float]:
    """Micro- and Macro-F1 of every split that holds a node (a graph without labels has none: no scores), and of
    the labelled nodes in no split ("outside": never trained on nor used to choose, scored apart)."""
    splits = {s: data.splits[s] for s in SPLITS if len(data.splits[s])}
    outside = data.outside_nodes()
    if len(outside):
        splits["outside"] = outside
    return split_scores(logits, data.labels, splits)


def _log_scores(name: str, sc: dict) -> None:
    if "test_micro_f1" not in sc or "val_micro_f1" not in sc:
        log.info("predict: %s: %s", name, ", ".join(f"{k} {v:.4f}" for k, v in sc.items()) or "no labelled node")
        return
    log.info(
        "predict: %s: test Micro-F1 %.4f Macro-F1 %.4f, validation Micro-F1 %.4f%s",
        name,
        sc["test_micro_f1"],
        sc["test_macro_f1"],
        sc["val_micro_f1"],
        f"; labelled in no split (outside, scored apart): Micro-F1 {sc['outside_micro_f1']:.4f}"
        if "outside_micro_f1" in sc
        else "",
    )


def _predict_runs(cfg: DictConfig, tcfg: DictConfig, chosen: Chosen) -> Predicted:
    """The chosen runs' predictions; the scores are compared with each run's own where the graph is the one it
    trained on."""
    device, why = device_of(cfg.device)
    where = cfg.get("dataset_path") or f"the graph of {chosen.cell}"
    log.info("predict: loading %s (%s)", where, tcfg.dataset.name)
    bound = graph_as_trained(tcfg, chosen.runs[0])
    job = DeviceGraph(tcfg, device, data=bound.data)
    data = job.data
    log.info(
        "predict: %s of %s on %s (%d %s nodes), device %s",
        chosen.why,
        chosen.cell,
        data.name,
        data.graph.num_nodes(data.target),
        data.target,
        why,
    )
    check_fits(data, chosen.runs[0], checkpoint.load_meta(chosen.runs[0]))  # another schema: named as such first
    graph = graph_check.graph_changes(cfg, bound.aligned, chosen.runs[0], tcfg)
    if bound.aligned is not None and tcfg.model.get("num_layers"):  # the hops a prediction rests on
        # a layer reads its neighbours' degrees too (the normalisation): one hop past the layers' reach
        hops = int(tcfg.model.num_layers) * max([1, *(int(p) for p in tcfg.model.get("powers") or [])]) + 1
        bound.aligned.in_reach = within_reach(data.graph, bound.aligned.new_by_type, hops)[data.target]
    embedded = (tcfg.get("trainer") or {}).get("embed_dim")
    grown = [t for t in (bound.aligned.changes.new if bound.aligned else {}) if data.is_id_only(t)]
    if embedded and grown:
        raise DataError(
            f"{chosen.cell} learnt a sparse embedding per {grown[0]} node (trainer.embed_dim), and the graph has "
            f"{bound.aligned.changes.new[grown[0]]} new ones it has none for; predict on the graph it trained on, "
            "or train on this one"
        )
    skip = graph_check.why_not_compared(cfg, tcfg, checkpoint.load_meta(chosen.runs[0]), bound.aligned)
    if skip:
        log.info("predict: the scores are not compared with the runs' recorded ones: %s", skip)
    probs, per_run, emb, weights, shares = None, {}, None, {}, None
    t0, n = time.monotonic(), len(chosen.runs)
    for k, run_dir in enumerate(chosen.runs, 1):
        logits, emb, weights[run_dir.name] = model_logits(job, tcfg, run_dir, str(cfg.get("inference", "auto")))
        if cfg.get("explain") and (got := run_shares(job, tcfg, run_dir)) is not None:  # neighbour shares
            rels, s = got
            shares = s / n if shares is None else shares + s / n
        per_run[run_dir.name] = scores(data, logits)
        if not skip:
            guard.check_scores(run_dir, per_run[run_dir.name], torch.device(device).type)
        spent = time.monotonic() - t0  # an ensemble's runs each cost what the first ones did
        where = f" ({k}/{n}, left ~{clock(spent / k * (n - k))})" if n > 1 else ""
        _log_scores(run_dir.name + where, per_run[run_dir.name])
        p = logits.softmax(1)
        probs = p if probs is None else probs + p
    probs = probs / len(chosen.runs)
    result = {"runs": per_run, "chosen": chosen.why, **({"graph": graph} if graph else {})}
    if len(chosen.runs) > 1:
        result["ensemble"] = scores(data, probs.log())
        _log_scores(f"ensemble of {len(chosen.runs)} runs", result["ensemble"])
    shares = None if shares is None else (rels, shares)
    why = reasons(job, tcfg, chosen.runs, str(cfg.get("inference", "auto"))) if cfg.get("explain") else None
    return Predicted(result, data, probs, emb, weights, chosen, tcfg, job, shares, bound.aligned, why)


@dataclass
class Predicted:
    """What predict computes before it writes (regnn.predict hands it to Python as it is)."""

    result: dict  # scores.json: each run's scores (and the ensemble's), which runs were chosen
    data: object  # the graph (HeteroDataset), its features scaled as the run trained
    probs: torch.Tensor  # class probabilities of every target node (the mean over an ensemble's runs)
    emb: torch.Tensor | None  # representations of every target node (the last run's)
    weights: dict  # run folder name -> relation weights per layer
    chosen: Chosen
    tcfg: DictConfig  # the config the runs trained with
    job: DeviceGraph  # the graph on its device, which loaded_model builds models for
    shares: tuple | None = None  # explain=true: (relation names, (nodes, relations) shares): node_shares.py
    aligned: Aligned | None = None  # the graph bound to the model's record: what changed, which nodes are new
    reasons: Reasons | None = None  # explain=true: each relation group's counterfactual effect per node


def predicted(cfg: DictConfig) -> Predicted:
    """Predictions of the run(s) cfg names (conf/predict.yaml's keys), checked as predict checks them, nothing
    written."""
    guard.refuse_unknown_keys(cfg)
    chosen = choose_runs(Path(cfg.run), bool(cfg.ensemble), bool(cfg.get("allow_missing", False)))
    tcfg = guard.trained_config(chosen.cell, cfg.get("dataset_path"))
    for run_dir in chosen.runs:
        guard.check_config(chosen.cell, run_dir, tcfg, checkpoint.load_meta(run_dir))
    graph_check.check_one_graph(chosen.runs)
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg.threads))
    return _predict_runs(cfg, tcfg, chosen)


def predict(cfg: DictConfig, out_dir: Path) -> dict:
    """Writes predictions.csv (and embeddings.npz on request) into out_dir, a folder outside the run that it holds
    while it writes; returns the scores. The run is only read."""
    guard.refuse_unknown_keys(cfg)
    guard.refuse_output_inside(out_dir, cfg.run)
    guard.refuse_inside_a_cell(out_dir, "hydra.run.dir", "predict")
    with guard.held(out_dir):
        p = predicted(cfg)
        io_safe.write_text(
            out_dir / "predictions.csv",
            predictions_frame(p.data, p.probs, p.shares, p.aligned, p.reasons).to_csv(index=False),
        )
        if cfg.get("embeddings") and p.emb is not None:
            embeddings.write(out_dir / "embeddings.npz", p.data, p.emb)
        io_safe.write_json(out_dir / "scores.json", p.result)
        # the learned weight of every relation and node-type self-loop in every layer: which relations the model's
        # predictions rest on (RE-GNN's explanation; empty for models without relation weights)
        io_safe.write_json(out_dir / "relation_weights.json", p.weights)
    log.info("predict: wrote %s", out_dir / "predictions.csv")
    return p.result
