"""A run's trained model, loaded as predict.py loads it: rebuilt from the cell's config.yaml through the builders
train.py used, its best-validation weights read from runs/run_XX/model.pt and checked (finite, the model's keys,
dtypes and shapes, the digest model.json records), and its class scores on a graph, by either trainer's path."""

from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import DictConfig

from regnn.errors import ConfigError, DataError
from regnn.models.regnn import renamed_from_earlier
from regnn.pipeline.from_config import arch_of
from regnn.pipeline.fullbatch import DeviceGraph
from regnn.runs import checkpoint, integrity
from regnn.training.trainer import autocast

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
    """model with the run's weights: finite, of the model's keys, dtypes and shapes, and the file training wrote
    (model.json's digest)."""
    f = run_dir / checkpoint.MODEL_FILE
    saved = checkpoint.load_weights(f)
    state = renamed_from_earlier(_as_read_by(saved, trained, path, run_dir), model.state_dict().keys())
    integrity.check_values(f, state, model.state_dict())
    integrity.check_weights(f, saved, checkpoint.load_meta(run_dir))
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


def check_fits(data, run_dir: Path, meta: dict) -> None:
    """DataError when the graph is not of the schema the model's weights are shaped by (node types, relations,
    feature widths, classes), naming what differs: no changed_graph=true makes such a graph fit."""
    diff = checkpoint.schema_differences(meta["schema"], checkpoint.graph_schema(data))
    if diff:
        raise DataError(f"the graph does not fit the model of {run_dir}: {'; '.join(diff)}")


def loaded_model(job: DeviceGraph, cfg: DictConfig, run_dir: Path, inference: str = "auto"):
    """(the run's model with its saved weights, in eval mode; the sampler's graph where it computes layer by layer,
    else None), whichever trainer saved it (one model, regnn.models.sampled)."""
    meta = checkpoint.load_meta(run_dir)
    check_fits(job.data, run_dir, meta)
    trained = meta.get("trainer", "fullbatch")
    path = inference_path(inference, trained, cfg)
    if path == "fullbatch":
        return _loaded(job.build(int(meta["seed"])), run_dir, trained, path), None
    from regnn.config import whole_graph_degrees
    from regnn.pipeline.from_config import build_sampled
    from regnn.training.sampling import SampledGraph

    tr, minibatch = cfg.get("trainer") or {}, trained == "minibatch"
    sg = SampledGraph(job.data, whole_graph_degrees=whole_graph_degrees(cfg.model))
    model = build_sampled(
        cfg.model,
        job.data,
        sg,
        tr.get("embed_dim") if minibatch else None,
        tr.get("input_dropout", "projected") if minibatch else "projected",
    )
    return _loaded(model.to(job.device), run_dir, trained, path), sg


def model_logits(
    job: DeviceGraph, cfg: DictConfig, run_dir: Path, inference: str = "auto"
) -> tuple[torch.Tensor, torch.Tensor | None, list]:
    """(class scores, representations or None, relation weights) of every target node from the run's saved
    weights: the whole graph at once, or layer by layer with every neighbour (regnn.training.block_inference:
    graphs too large for one pass; the same scores up to float rounding)."""
    model, sg = loaded_model(job, cfg, run_dir, inference)
    if sg is not None:
        from regnn.training.block_inference import layerwise_outputs

        seeds = sg.seeds(torch.arange(job.data.graph.num_nodes(job.data.target)))
        batch = int((cfg.get("trainer") or {}).get("eval_batch_size") or 4096)
        logits, emb = layerwise_outputs(model, sg, seeds, batch, job.device)
        return logits.float().cpu(), emb.float().cpu(), model.relation_weights()
    with torch.no_grad(), autocast(str(cfg.get("precision", "fp32")), job.labels.device):
        logits, emb = model(job.inputs, job.feats, embed=True)
    weights = getattr(model, "relation_weights", list)()
    return logits.float().cpu(), (emb.float().cpu() if emb is not None else None), weights
