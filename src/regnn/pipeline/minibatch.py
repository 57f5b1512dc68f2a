"""The mini-batch job: neighbour sampling (regnn.training.minibatch) for graphs too large for full-batch training,
optionally one process per device under torchrun (only rank 0 writes anything). It trains the RE-GNN stacks
(model.arch=regnn); regnn.config.validate_minibatch refuses the others before anything is written."""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from regnn.config import whole_graph_degrees
from regnn.loggers import make_logger
from regnn.runs.executor import job_threads
from regnn.pipeline.job import run_job, stop_note
from regnn.pipeline.from_config import build_sampled, device_of, load_data
from regnn.spec import training_of, user_errors
from regnn.runs.resume import checkpoint_of
from regnn.runs.store import CellStore, JobFacts, failed_note, run_record
from regnn.perf import keep_freed_memory, peak_rss_gb
from regnn.training.divergence import Diverged, failed_record
from regnn.training.loop import Hooks
from regnn.training.seed import seed_everything

log = logging.getLogger("regnn")

SUMMARY_KEYS = ("test_acc", "val_acc", "test_micro_f1", "test_macro_f1", "val_micro_f1", "val_macro_f1",
                "best_epoch", "epochs", "train_time_s", "epoch_time_s", "seeds_per_s", "sampling_share")


def run(cfg: DictConfig, store: CellStore) -> dict:
    """Like the full-batch job, with regnn.training.minibatch; under torchrun only rank 0 writes anything."""
    return run_job(MinibatchJob(cfg, store))


class MinibatchJob:
    """The mini-batch job of one cell (pipeline.job.CellJob): device, processes, the sampled graph, the logger."""

    summary_keys = SUMMARY_KEYS

    def __init__(self, cfg: DictConfig, store: CellStore):
        from regnn.models.sampled import learnt_types
        from regnn.training.distributed import Dist
        from regnn.training.minibatch import check_backend
        from regnn.training.sampling import SampledGraph

        self.cfg, t = cfg, cfg.trainer
        keep_freed_memory(every_size=True)  # a sampled step's (sources x hidden) tensors fault in ~0.1 s each
        if threads := job_threads(cfg):
            torch.set_num_threads(threads)
        device, self.why = device_of(cfg)
        self.dist = dist = Dist.from_env(str(t.ddp_backend), device)
        self.device = torch.device("cuda", dist.local_rank) if dist.enabled and device.type == "cuda" else device
        self.store = store.at(Path(dist.broadcast_object(str(store.dir))))  # every process reports to rank 0's
        if not dist.is_main:
            log.setLevel(logging.WARNING)  # one progress stream: rank 0's
        self.label = f"{cfg.model.name} on {cfg.dataset.name}"
        log.info("%s: mini-batch, device %s, %d threads, %d runs from seed %d%s", self.label, self.why,
                 torch.get_num_threads(), cfg.runs, cfg.seed,
                 f", process {dist.rank} of {dist.world_size} ({dist.backend})" if dist.enabled else "")
        self.t0 = time.perf_counter()
        with dist.main_first():  # rank 0 first: ogb writes its processed cache on first use
            self.data = data = load_data(cfg.dataset)
        with user_errors():  # before anything is written: a backend that cannot train this graph's inputs
            check_backend(bool(learnt_types(data.features, cfg.trainer.embed_dim)), dist.backend)
        self.sg = SampledGraph(data, whole_graph_degrees=whole_graph_degrees(cfg.model))
        self.load_s = time.perf_counter() - self.t0
        log.info("data: %s, %d nodes of %d types, %d edges of %d relation types, %d %s classes, train/val/test "
                 "%d/%d/%d (%.1fs, peak memory %.2f GB)", data.name, data.graph.num_nodes(), len(data.graph.ntypes),
                 data.graph.num_edges(), len(data.graph.etypes), data.num_classes, data.target,
                 *(len(data.splits[s]) for s in ("train", "val", "test")), self.load_s, peak_rss_gb())
        plain_cfg = OmegaConf.to_container(cfg, resolve=True)
        self.logger = make_logger(out_dir=self.store.dir, group=f"{cfg.dataset.name}-{cfg.model.name}",
                                  config=plain_cfg, **(plain_cfg["logger"] if dist.is_main else {"name": "none"}))
        self.num_parameters = None  # counted on the first model built (it holds every node's learnable embeddings)
        self.is_main = dist.is_main

    def kept_runs(self) -> set[int]:
        # every process keeps the runs rank 0 found finished, so all train the same ones
        return self.dist.broadcast_object(self.store.kept_runs())

    def before_runs(self, kept: set[int]) -> dict:
        return {"score": ("test_acc", "test accuracy")}

    def summary_fields(self) -> JobFacts:
        if self.num_parameters is None:  # every run was kept: count one model
            self.counted(self.build())
        return JobFacts(device=self.device, device_note=self.why, trainer="minibatch",
                        environment={"threads": torch.get_num_threads(), "processes": self.dist.world_size},
                        num_parameters=self.num_parameters, relation_names=self.sg.relation_names,
                        extra={"load_time_s": self.load_s}, split_sizes=self.data.split_sizes(),
                        chance=self.data.chance_micro_f1())

    def report(self, summary: dict) -> None:
        m = summary["metrics"]
        log.info("%s (%d runs%s): test accuracy %.2f ± %.2f, %.0f seeds/s, peak memory %.2f GB -> %s", self.label,
                 summary["finished_runs"], failed_note(summary), m["test_acc"]["mean"], m["test_acc"]["std"],
                 m["seeds_per_s"]["mean"], summary["peak_rss_gb"], self.store.dir)

    def close(self) -> None:
        self.dist.close()

    def build(self):
        return build_sampled(self.cfg.model, self.data, self.sg, self.cfg.trainer.embed_dim).to(self.device)

    def counted(self, model):
        if self.num_parameters is None:
            self.num_parameters = sum(p.numel() for p in model.parameters())
            log.info("model: %s, %d parameters", self.cfg.model.name, self.num_parameters)
        return model

    def train_one(self, run: int):
        """Trains and scores run `run`; rank 0 saves it. Returns (record, relation weights or None)."""
        from regnn.training.distributed import param_digest
        from regnn.training.minibatch import train_minibatch_run

        cfg, data, dist, device = self.cfg, self.data, self.dist, self.device
        seed = cfg.seed + run
        seed_everything(seed, cfg.deterministic)
        model = self.counted(self.build())
        self.logger.start_run(run, seed)
        ckpt = None if dist.enabled else checkpoint_of(cfg, self.store, run)  # one process: one writer
        try:
            result = train_minibatch_run(model, self.sg, data.labels, data.splits, seed=seed,
                                         num_classes=data.num_classes, options=training_of(cfg), device=device,
                                         dist=dist, hooks=Hooks(self.logger.log_epoch, ckpt))
        except Diverged as e:
            rec = failed_record(run, seed, e)
            return (self.store.save_failed(rec, self.logger, device) if dist.is_main else rec), None
        rec = run_record(result, run, device)
        rec["seeds_per_s"] = float(np.median([h["seeds_per_s"] for h in result.history]))
        rec["sampling_share"] = float(np.median([h["sample_s"] / h["train_time_s"] for h in result.history]))
        rec["peak_rss_gb"] = peak_rss_gb()
        if dist.enabled:
            rec["ddp"] = {"world_size": dist.world_size, "backend": dist.backend,
                          "param_digests": dist.gather_objects(param_digest(model))}
        self.logger.end_run(rec)
        if dist.is_main:
            if cfg.save_embeddings:  # every target node's representation, with every neighbour (no sampling)
                from regnn.training.block_inference import layerwise_outputs
                seeds = self.sg.seeds(torch.arange(data.graph.num_nodes(data.target)))
                result.embeddings = layerwise_outputs(model.eval(), self.sg, seeds,
                                                      int(cfg.trainer.eval_batch_size), device)[1]
            self.store.save_run(rec, result, data, cfg.save_embeddings, model=model, trainer="minibatch")
        if ckpt is not None:
            ckpt.remove()
        log.info("run %d/%d seed %d: test accuracy %.2f (Macro-F1 %.2f), val %.2f (best epoch %d of %d, %.0f "
                 "seeds/s, %.0f%% of it sampling, %.1fs%s)", run + 1, cfg.runs, seed, rec["test_acc"],
                 rec["test_macro_f1"], rec["val_acc"], rec["best_epoch"], rec["epochs"], rec["seeds_per_s"],
                 100 * rec["sampling_share"], rec["train_time_s"], stop_note(rec, cfg.trainer.get("max_epochs")))
        return rec, result.relation_weights
