"""predict.py: a trained run's predictions for every target node, labelled or not.

The run's model is rebuilt from its cell's config.yaml through the same builders train.py used, its best-validation
weights read from runs/run_XX/model.pt (tensors only), and applied to the graph it was trained on, or to a graph of
the same schema with more nodes and edges (dataset_path). The labelled splits are scored as the run scored them
when it trained: the printed test Micro-F1 is its results.json's, which tests the checkpoint.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf

from regnn.errors import ConfigError, DataError
from regnn.evaluation.metrics import split_scores
from regnn.data.scaling import apply_feature_norm
from regnn.pipeline.from_config import arch_of, device_of, load_data
from regnn.pipeline.fullbatch import DeviceGraph
from regnn.runs import checkpoint, embeddings, io_safe
from regnn.training.trainer import autocast

log = logging.getLogger("regnn")
SPLITS = ("train", "val", "test")


@dataclass
class Chosen:
    cell: Path
    runs: list[Path]  # the run folders whose models predict (one, or every finished run for an ensemble)
    why: str


def choose_runs(path: Path, ensemble: bool) -> Chosen:
    """A run folder as it is; a cell folder: its run with the best validation Micro-F1 (ties: the earlier run), or
    every finished run with ensemble=true."""
    path = Path(path).resolve()
    if (path / checkpoint.META_FILE).exists() or path.parent.name == "runs":
        return Chosen(path.parent.parent, [path], f"run {path.name}")
    chosen_path = (io_safe.read_json(path / "results.json", io_safe.is_cell_summary) or {}).get("metapath")
    if chosen_path and (path / "metapaths" / chosen_path / "config.yaml").exists():
        path = path / "metapaths" / chosen_path  # GCN-M / GAT-M / ...: the meta-path the cell chose on validation
    if not (path / "config.yaml").exists():
        raise ConfigError(
            f"run={path} is neither a cell folder (config.yaml, runs/) nor a run folder (runs/run_XX); "
            "give one that train.py wrote"
        )
    recs = []
    for d in sorted((path / "runs").glob("run_*")):
        rec = io_safe.read_json(d / "results.json", io_safe.is_run_record)
        if rec is not None and "failed" not in rec and (d / checkpoint.MODEL_FILE).exists():
            recs.append((d, rec))
    if not recs:
        raise DataError(
            f"{path} holds no finished run with a saved model (runs/run_XX/model.pt); train it with "
            "save_model=true (the default)"
        )
    if ensemble:
        return Chosen(path, [d for d, _ in recs], f"the ensemble of its {len(recs)} runs")
    best = max(recs, key=lambda dr: (dr[1]["val_micro_f1"], -dr[1]["run"]))
    return Chosen(path, [best[0]], f"run {best[1]['run']} (best validation Micro-F1 {best[1]['val_micro_f1']:.2f})")


def trained_config(cell: Path, dataset_path: str | None) -> DictConfig:
    cfg = OmegaConf.load(cell / "config.yaml")
    if dataset_path is not None:
        if cfg.dataset.get("format") != "custom":
            raise ConfigError(
                f"dataset_path= replaces a custom graph's files; {cell} was trained on "
                f"{cfg.dataset.name}, read from its own folder"
            )
        cfg.dataset.path = str(Path(dataset_path).resolve())
    return cfg


def graph_as_trained(cfg: DictConfig, run_dir: Path):
    """The graph, its features scaled with the statistics the run trained with (dataset.feature_norm: fitted on
    the training graph and saved beside the model, never refitted on this one)."""
    fitted = checkpoint.load_scaling(run_dir, checkpoint.load_meta(run_dir))
    if fitted is None:  # a model saved without its scaling: the configured scaling, fitted on this graph
        return load_data(cfg.dataset)
    raw = OmegaConf.merge(cfg.dataset, {"feature_norm": "none"})
    return apply_feature_norm(load_data(raw), "none", fitted=fitted)


SAMPLED_PREFIX = "regnn."  # the mini-batch model holds the full-batch one as .regnn (and its inputs beside it)


def _as_read_by(state: dict, trained: str, path: str, run_dir: Path) -> dict:
    """The saved weights renamed for the other trainer's model: both train one model (regnn.models.sampled), the
    mini-batch one wrapping the full-batch one; only sparse embeddings of feature-less types (trainer.embed_dim)
    have no full-batch counterpart."""
    if trained == path:
        return state
    if path == "minibatch":
        return {SAMPLED_PREFIX + k: v for k, v in state.items()}
    extra = sorted(k for k in state if not k.startswith(SAMPLED_PREFIX))
    if extra:
        raise ConfigError(
            f"{run_dir} learnt sparse embeddings for its feature-less node types (trainer.embed_dim; "
            f"{extra[0]}, ...), which the full-batch model does not have: predict with "
            "inference=minibatch (or auto)"
        )
    return {k[len(SAMPLED_PREFIX) :]: v for k, v in state.items()}


def _loaded(model, run_dir: Path, trained: str = "fullbatch", path: str = "fullbatch"):
    state = _as_read_by(checkpoint.load_weights(run_dir / checkpoint.MODEL_FILE), trained, path, run_dir)
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise DataError(
            f"{run_dir / checkpoint.MODEL_FILE} does not fit the model its config.yaml builds "
            f"({str(e).splitlines()[0][:200]})"
        ) from None
    return model.eval()


def inference_path(requested: str, trained: str, cfg: DictConfig) -> str:
    """fullbatch | minibatch: how the model computes its scores (`inference`; auto: as the run trained)."""
    if requested not in ("auto", "fullbatch", "minibatch"):
        raise ConfigError(
            f"inference={requested!r}: use auto (as the run trained), fullbatch (the whole graph at "
            "once) or minibatch (layer by layer on blocks of every neighbour)"
        )
    path = trained if requested == "auto" else requested
    if path == "minibatch" and not arch_of(cfg.model).sampled:
        raise ConfigError(
            f"inference=minibatch: {cfg.model.name} trains and predicts full-batch only; use inference=fullbatch"
        )
    return path


def model_logits(
    job: DeviceGraph, cfg: DictConfig, run_dir: Path, inference: str = "auto"
) -> tuple[torch.Tensor, torch.Tensor | None, list]:
    """(class scores, representations or None, relation weights) of every target node from the run's saved
    weights, by either path whichever trainer saved them (one model, regnn.models.sampled): the whole graph at
    once, or layer by layer with every neighbour (regnn.training.block_inference.layerwise_outputs: graphs too
    large for one pass; the same scores up to float rounding)."""
    meta = checkpoint.load_meta(run_dir)
    diff = checkpoint.schema_differences(meta["schema"], checkpoint.graph_schema(job.data))
    if diff:
        raise DataError(f"the graph does not fit the model of {run_dir}: {'; '.join(diff)}")
    trained = meta.get("trainer", "fullbatch")
    path = inference_path(inference, trained, cfg)
    if path == "minibatch":
        from regnn.config import whole_graph_degrees
        from regnn.pipeline.from_config import build_sampled
        from regnn.training.block_inference import layerwise_outputs
        from regnn.training.sampling import SampledGraph

        tr = cfg.get("trainer") or {}
        sg = SampledGraph(job.data, whole_graph_degrees=whole_graph_degrees(cfg.model))
        minibatch = trained == "minibatch"
        model = build_sampled(
            cfg.model,
            job.data,
            sg,
            tr.get("embed_dim") if minibatch else None,
            tr.get("input_dropout", "projected") if minibatch else "projected",
        )
        model = _loaded(model.to(job.device), run_dir, trained, path)
        seeds = sg.seeds(torch.arange(job.data.graph.num_nodes(job.data.target)))
        logits, emb = layerwise_outputs(model, sg, seeds, int(tr.get("eval_batch_size") or 4096), job.device)
        return logits.float().cpu(), emb.float().cpu(), model.relation_weights()
    model = _loaded(job.build(int(meta["seed"])), run_dir, trained, path)
    with torch.no_grad(), autocast(str(cfg.get("precision", "fp32")), job.labels.device):
        logits, emb = model(job.inputs, job.feats, embed=True)
    weights = getattr(model, "relation_weights", list)()
    return logits.float().cpu(), (emb.float().cpu() if emb is not None else None), weights


def predictions_frame(data, probs: torch.Tensor) -> pd.DataFrame:
    """One row per target node: its id (the user's own where the data has one, else its position), split, label
    and predicted class (by name where the classes have names, -1 / empty: unlabelled) and the probabilities."""
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
    return df


def scores(data, logits: torch.Tensor) -> dict[str, float]:
    return split_scores(logits, data.labels, {s: data.splits[s] for s in SPLITS})


def predict(cfg: DictConfig, out_dir: Path) -> dict:
    """Writes predictions.csv (and embeddings.npz on request) into out_dir; returns the scores."""
    chosen = choose_runs(Path(cfg.run), bool(cfg.ensemble))
    tcfg = trained_config(chosen.cell, cfg.get("dataset_path"))
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg.threads))
    device, why = device_of(cfg.device)
    job = DeviceGraph(tcfg, device, data=graph_as_trained(tcfg, chosen.runs[0]))
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
    probs, per_run, emb, weights = None, {}, None, {}
    for run_dir in chosen.runs:
        logits, emb, weights[run_dir.name] = model_logits(job, tcfg, run_dir, str(cfg.get("inference", "auto")))
        per_run[run_dir.name] = scores(data, logits)
        p = logits.softmax(1)
        probs = p if probs is None else probs + p
    probs = probs / len(chosen.runs)
    result = {"runs": per_run, "chosen": chosen.why}
    if len(chosen.runs) > 1:
        result["ensemble"] = scores(data, probs.log())
    for name, sc in per_run.items():
        log.info(
            "predict: %s: test Micro-F1 %.4f Macro-F1 %.4f, validation Micro-F1 %.4f",
            name,
            sc["test_micro_f1"],
            sc["test_macro_f1"],
            sc["val_micro_f1"],
        )
    if "ensemble" in result:
        e = result["ensemble"]
        log.info(
            "predict: ensemble of %d runs: test Micro-F1 %.4f Macro-F1 %.4f, validation Micro-F1 %.4f",
            len(chosen.runs),
            e["test_micro_f1"],
            e["test_macro_f1"],
            e["val_micro_f1"],
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    io_safe.write_text(out_dir / "predictions.csv", predictions_frame(data, probs).to_csv(index=False))
    if cfg.get("embeddings") and emb is not None:
        embeddings.write(out_dir / "embeddings.npz", data, emb)
    io_safe.write_json(out_dir / "scores.json", result)
    # the learned weight of every relation and node-type self-loop in every layer: which relations the model's
    # predictions rest on (RE-GNN's explanation; empty for models without relation weights)
    io_safe.write_json(out_dir / "relation_weights.json", weights)
    log.info("predict: wrote %s", out_dir / "predictions.csv")
    return result
