"""The mini-batch job: neighbour sampling (regnn.training.minibatch) for graphs too large for full-batch training,
optionally one process per device under torchrun (only rank 0 writes anything). It trains the RE-GNN stacks
(model.arch=regnn); regnn.config.validate_minibatch refuses the others before anything is written."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from regnn.config import whole_graph_degrees
from regnn.pipeline.from_config import build_sampled, load_data
from regnn.pipeline.job import CellJob
from regnn.training.trainer import RUN_KEYS
from regnn.pipeline.place import Placement
from regnn.runs.store import CellStore
from regnn.runtime.perf import peak_rss_gb
from regnn.spec import user_errors
from regnn.training.loop import Hooks

log = logging.getLogger("regnn")

SUMMARY_KEYS = ("test_acc", "val_acc", *RUN_KEYS, "seeds_per_s", "sampling_share")  # and OGB's accuracy, the sampler


def processes(place: Placement, store: CellStore, ddp_backend: str) -> tuple[Placement, CellStore]:
    """The mini-batch job's processes (torchrun's ranks, or this one alone), before the job exists: each rank's
    device, and rank 0's folder for every rank's store (every process reports to it)."""
    from regnn.training.distributed import Dist

    dist = Dist.from_env(str(ddp_backend), place.device)
    device = torch.device("cuda", dist.local_rank) if dist.enabled and place.device.type == "cuda" else place.device
    store = store.at(Path(dist.broadcast_object(str(store.dir))))
    if not dist.is_main:
        log.setLevel(logging.WARNING)  # one progress stream: rank 0's
    return replace(place, device=device, dist=dist), store


class MinibatchJob(CellJob):
    """The mini-batch job of one cell (pipeline.job.CellJob): processes, the sampled graph, blocks per step."""

    summary_keys = SUMMARY_KEYS
    score = ("test_acc", "test accuracy")
    trainer = "minibatch"

    @property
    def dist(self):
        return self.place.dist

    def process_note(self) -> str:
        d = self.dist
        return f", process {d.rank} of {d.world_size} ({d.backend})" if d.enabled else ""

    def prepare(self):
        from regnn.models.sampled import learnt_types
        from regnn.training.distributed import check_backend
        from regnn.training.sampling import SampledGraph

        with self.dist.main_first():  # rank 0 first: ogb writes its processed cache on first use
            data = load_data(self.cfg.dataset)
        with user_errors():  # before anything is written: a backend that cannot train this graph's inputs
            check_backend(bool(learnt_types(data.features, self.cfg.trainer.embed_dim)), self.dist.backend)
        self.sg = SampledGraph(data, whole_graph_degrees=whole_graph_degrees(self.cfg.model))
        return data

    def build(self):
        tr = self.cfg.trainer
        return build_sampled(self.model_spec, self.data, self.sg, tr.embed_dim, tr.input_dropout).to(self.device)

    def counted(self, model):
        first = self.num_parameters is None
        model = super().counted(model)
        if first:
            self.relation_names = self.sg.relation_names
        return model

    def kept_runs(self) -> dict:
        # every process keeps the runs rank 0 found finished, so all train the same ones
        return self.dist.broadcast_object(self.store.kept_runs())

    def checkpoint(self, run: int):
        return None if self.dist.enabled else super().checkpoint(run)  # one process: one writer

    def fit(self, model, run: int, seed: int, checkpoint):
        from regnn.training.minibatch import train_minibatch_run

        data = self.data
        return train_minibatch_run(
            model,
            self.sg,
            data.labels,
            self.splits_of(run),
            seed=seed,
            num_classes=data.num_classes,
            options=self.training,
            device=self.device,
            dist=self.dist,
            hooks=Hooks(self.logger.log_epoch, checkpoint),
        )

    def record_extras(self, result, model) -> dict:
        from regnn.training.distributed import param_digest

        h, dist = result.history, self.dist
        rec = {
            "seeds_per_s": float(np.median([r["seeds_per_s"] for r in h])),
            "sampling_share": float(np.median([r["sample_s"] / r["train_time_s"] for r in h])),
            "peak_rss_gb": peak_rss_gb(),
        }
        if dist.enabled:
            rec["ddp"] = {
                "world_size": dist.world_size,
                "backend": dist.backend,
                "param_digests": dist.gather_objects(param_digest(model)),
            }
        return rec

    def save(self, rec: dict, result, model) -> None:
        if self.spec.save_embeddings:  # every target node's representation, with every neighbour (no sampling)
            from regnn.training.block_inference import layerwise_outputs

            data = self.data
            seeds = self.sg.seeds(torch.arange(data.graph.num_nodes(data.target)))
            result.embeddings = layerwise_outputs(
                model.eval(), self.sg, seeds, int(self.cfg.trainer.eval_batch_size), self.device
            )[1]
        super().save(rec, result, model)

    def describe(self, rec: dict) -> tuple[str, str]:
        return (
            f"test accuracy {rec['test_acc']:.2f} (Macro-F1 {rec['test_macro_f1']:.2f}), val {rec['val_acc']:.2f}",
            f"{rec['seeds_per_s']:.0f} seeds/s, {100 * rec['sampling_share']:.0f}% of it sampling, ",
        )

    def environment(self) -> dict:
        return {"threads": torch.get_num_threads(), "processes": self.dist.world_size}

    def more_facts(self) -> dict:
        return {"extra": {"load_time_s": self.load_s}}

    def scores_line(self, summary: dict) -> str:
        acc, speed, memory = summary["metrics"]["test_acc"], summary["metrics"]["seeds_per_s"], summary["peak_rss_gb"]
        speed_and_memory = f"{speed['mean']:.0f} seeds/s, peak memory {memory:.2f} GB"
        return f"test accuracy {acc['mean']:.2f} ± {acc['std']:.2f}, {speed_and_memory}"

    def close(self) -> None:
        self.dist.close()
