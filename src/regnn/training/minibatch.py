"""Mini-batch training with neighbour sampling: one run, early stopping on validation accuracy.

Each step samples `fanouts` in-neighbours per node for a batch of target nodes (seeds), runs the model on the
blocks and steps Adam (and SparseAdam for learnable node embeddings). Evaluation is batched: `sampled` (the same
sampler, eval_fanouts) or `layerwise` (exact, every neighbour, one layer at a time). Accuracy is computed with
the ogb Evaluator. Under torch.distributed (see regnn.training.distributed) every process trains on its shard of
the seeds with DDP-averaged gradients and evaluates its share of the evaluation nodes; predictions are summed
across processes, so every process sees the same accuracy and stops at the same epoch.
"""

from __future__ import annotations

import logging
import time

import torch
import torch.nn.functional as F

from regnn.training.distributed import Dist, check_backend
from regnn.training.options import MinibatchOptions
from regnn.training.divergence import check_loss, check_parameters
from regnn.training.loop import EpochLoop, Hooks
from regnn.runtime.perf import StepTimer, peak_rss_gb
from regnn.training.block_inference import Scorer
from regnn.training.sampling import SampledGraph, sampled_loader, to_device
from regnn.training.trainer import RunResult, make_optimizer

log = logging.getLogger("regnn")
DEFAULT_EPOCHS = 100  # max_epochs=None: at least this many epochs (OGBN-MAG's), more to reach min_steps
MEMORY_AT = (50, 300)  # batches at which a profiled epoch records the memory high-water mark (and its last)


def train_minibatch_run(
    model,
    sg: SampledGraph,
    labels: torch.Tensor,
    splits: dict[str, torch.Tensor],
    *,
    seed: int,
    num_classes: int,
    options: MinibatchOptions,
    device="cpu",
    dist: Dist | None = None,
    hooks: Hooks = Hooks(),
) -> RunResult:
    """Trains `model` (a SampledREGNN) and returns the scores of its best-validation weights (stop_on: the scores
    that must improve for an epoch to be the best, as the full-batch trainer's: val_acc, val_loss, ...). hooks: the
    logger's per-epoch call and the run's mid-run checkpoint (regnn.training.loop.Hooks).

    Training length is counted in epochs and in optimizer steps, so that it works whether an epoch is one batch
    (a few hundred training nodes) or hundreds (OGBN-MAG): the run lasts up to max_epochs epochs (None:
    DEFAULT_EPOCHS, or as many more as reach min_steps steps where an epoch holds few batches); early stopping
    ends it only after `patience` epochs AND `patience_steps` steps without a better validation score, and
    never before min_steps steps. With many batches per epoch the epoch counts bind (10 epochs of OGBN-MAG are
    thousands of steps); with one, the step counts do (10 one-step epochs are 10 Adam steps, far too few).

    Every epoch's history row has the time spent waiting for sampled batches (sample_s: sampling and building the
    batch's adjacencies, or waiting for the sampling threads) and the rest (compute_s); profile=True adds the
    seconds per batch of every phase of a step (profile_*_s: blocks (the adjacencies to the device), feature gather,
    input projection, the forward of every layer, backward, optimizer step) and the process's memory high-water mark
    at batches 50 and 300 and the epoch's last (peak_rss_gb_batch_*)."""
    run = _MinibatchRun(model, sg, labels, splits, seed, num_classes, options, device, dist or Dist())

    def report(row, best_epoch):
        log.info(
            "epoch %d: train loss %.4f acc %.2f | val acc %.2f | %.0f seeds/s, %.1fs (best epoch %d)",
            row["epoch"],
            row["train_loss"],
            row["train_acc"],
            row["val_acc"],
            row["seeds_per_s"],
            row["epoch_time_s"],
            best_epoch,
        )

    loop = run.loop = EpochLoop(
        model,
        options.stop_rule(run.max_epochs),
        num_classes,
        options.optimizer.get("lr"),
        check_losses=False,  # run.epoch checks
        on_epoch=hooks.on_epoch,
        report=report,
    )
    t_run = time.perf_counter()
    ckpt = hooks.checkpoint
    if ckpt is not None:  # mid-run checkpoints (regnn.runs.resume): the sampler's epoch travels with them
        ckpt.attach(model, run, loop)
    history = loop.run(lambda epoch: run.epoch(epoch, loop.steps), ckpt)
    return run.result(history, time.perf_counter() - t_run + (ckpt.trained_s if ckpt else 0.0))


class _MinibatchRun:
    """One run's optimizers, sampler, scorer and stopping state, and its epochs (train_minibatch_run's steps)."""

    def __init__(
        self,
        model,
        sg: SampledGraph,
        labels,
        splits,
        seed: int,
        num_classes: int,
        options: MinibatchOptions,
        device,
        dist: Dist,
    ):
        o = options
        sparse = list(model.inputs.embeddings.parameters())
        check_backend(bool(sparse), dist.backend)
        self.model, self.net, self.sg, self.labels, self.splits = model, model, sg, labels, splits
        self.options, self.device, self.dist, self.seed = o, device, dist, seed
        if dist.enabled:
            self.net = torch.nn.parallel.DistributedDataParallel(
                model,
                device_ids=[torch.device(device).index] if torch.device(device).type == "cuda" else None,
                find_unused_parameters=True,
            )  # a batch without some node type leaves its projection unused
        dense = [p for n, p in model.named_parameters() if not n.startswith("inputs.embeddings.")]
        self.opts = [make_optimizer(dense, **o.optimizer)] + (
            [torch.optim.SparseAdam(sparse, lr=o.embed_lr)] if sparse else []
        )
        self.loader = sampled_loader(
            sg,
            sg.seeds(splits["train"]),
            list(o.fanouts),
            o.batch_size,
            shuffle=True,
            use_ddp=dist.enabled,
            num_workers=o.num_workers,
            sampling=o.sampling,
            seed=seed,
        )
        self.score = Scorer(model, sg, labels, num_classes, o, device=device, dist=dist, seed=seed)
        n = len(self.loader)
        self.n_batches = n if not o.max_batches else min(n, o.max_batches)
        self.max_epochs = (
            o.max_epochs if o.max_epochs is not None else max(DEFAULT_EPOCHS, -(-o.min_steps // max(1, self.n_batches)))
        )
        self.timer = model.timer = StepTimer(False, device)  # on for training steps only, not evaluation
        self.timer.layers(
            {f"forward layer {i}": conv for i, conv in enumerate(model.regnn.convs)}
            | ({"forward output layer": model.regnn.head} if model.regnn.head is not None else {})
        )

    def state(self) -> dict:
        """What a checkpoint keeps of the run beyond the model and the loop: the optimizers and the sampler's epoch
        (every batch of an epoch draws from a generator seeded by the run's seed and the epoch)."""
        return {"optimizers": [o.state_dict() for o in self.opts], "loader_epoch": self.loader.epoch}

    def load_state(self, state: dict) -> None:
        for o, st in zip(self.opts, state["optimizers"]):
            o.load_state_dict(st)
        self.loader.epoch = int(state["loader_epoch"])

    def _step(self, input_nodes, output_nodes, adjs):
        """One optimizer step on one sampled batch: (its loss, its labels, its logits)."""
        timer = self.timer
        with timer("blocks"):
            adjs = to_device(adjs, self.device)
        y = self.labels[output_nodes - self.sg.target_offset].to(self.device)
        with timer("forward"):
            logits = self.net(input_nodes, adjs)
            loss = F.cross_entropy(logits, y)
        for o in self.opts:
            o.zero_grad()
        with timer("backward"):
            loss.backward()
        with timer("optimizer step"):
            for o in self.opts:
                o.step()
        return loss.item(), y, logits, adjs

    def _train(self, epoch: int, steps: int) -> dict:
        """The epoch's pass over the training batches: counts, loss, sampling time, profile sizes and memory."""
        o, dist, lr = self.options, self.dist, self.options.optimizer.get("lr")
        self.model.train()
        t0 = time.perf_counter()
        seen = correct = 0
        loss_sum = sample_s = 0.0
        memory, sizes = {}, torch.zeros(5, dtype=torch.float64)
        self.timer.enabled = o.profile
        t_ask = time.perf_counter()
        for b, (input_nodes, output_nodes, adjs, _) in enumerate(self.loader):
            if b >= self.n_batches:
                break
            sample_s += time.perf_counter() - t_ask  # waiting for the loader: sampling (or its threads falling behind)
            batch_loss, y, logits, adjs = self._step(input_nodes, output_nodes, adjs)
            seen += y.numel()
            steps += 1
            if not dist.enabled:  # under DDP every process checks the summed loss below, so all stop together
                check_loss(batch_loss, f"training loss of batch {b}", epoch, lr)
            loss_sum += batch_loss * y.numel()
            correct += int((logits.argmax(-1) == y).sum())
            if o.profile:
                sizes += torch.tensor(
                    [
                        input_nodes.numel(),
                        adjs[0].indices.numel(),
                        adjs[0].num_dst,
                        adjs[-1].indices.numel(),
                        adjs[-1].num_dst,
                    ],
                    dtype=torch.float64,
                )
                if b + 1 in MEMORY_AT or b + 1 == self.n_batches:
                    memory[f"peak_rss_gb_batch_{b + 1}"] = peak_rss_gb()
            if o.log_every and (b + 1) % o.log_every == 0:
                dt = time.perf_counter() - t0
                log.info(
                    "epoch %d batch %d/%d: loss %.4f, %.0f seeds/s (sampling %.0f%% of the time)%s",
                    epoch,
                    b + 1,
                    self.n_batches,
                    loss_sum / seen,
                    seen / dt,
                    100 * sample_s / dt,
                    f" (rank {dist.rank})" if dist.enabled else "",
                )
            t_ask = time.perf_counter()
        return {
            "t0": t0,
            "train_s": time.perf_counter() - t0,
            "seen": seen,
            "correct": correct,
            "loss_sum": loss_sum,
            "sample_s": sample_s,
            "steps": steps,
            "memory": memory,
            "sizes": sizes,
        }

    def epoch(self, epoch: int, steps: int) -> dict:
        """Trains one epoch and validates: the epoch's history row."""
        p = self._train(epoch, steps)
        lr, n_batches = self.options.optimizer.get("lr"), self.n_batches
        self.timer.enabled, phases = False, self.timer.take()
        totals = self.dist.all_sum(torch.tensor([p["seen"], p["correct"], p["loss_sum"]], dtype=torch.float64))
        wall = self.dist.all_max(p["train_s"])
        check_loss(float(totals[2]), "training loss", epoch, lr)
        check_parameters(self.model, epoch, lr)
        val = self.score(self.splits["val"])
        check_loss(val["loss"], "validation loss", epoch, lr)
        row = {
            "epoch": epoch,
            "steps": p["steps"],
            "train_loss": float(totals[2] / totals[0]),
            "train_acc": 100.0 * float(totals[1] / totals[0]),
            "val_loss": val["loss"],
            "val_acc": val["acc"],
            "val_micro_f1": val["micro_f1"],
            "val_macro_f1": val["macro_f1"],
            "seeds": int(totals[0]),
            "batches": n_batches,
            "seeds_per_s": float(totals[0]) / wall,
            "train_time_s": wall,
            "sample_s": p["sample_s"],
            "compute_s": p["train_s"] - p["sample_s"],
            "epoch_time_s": time.perf_counter() - p["t0"],
        }
        if self.options.profile:  # seconds per batch of every phase, and the memory high-water mark along the epoch
            row |= {f"profile_{k.replace(' ', '_')}_s": v / max(1, n_batches) for k, v in phases.items()}
            row |= {"profile_sample_s": p["sample_s"] / max(1, n_batches)} | p["memory"]
            row |= dict(
                zip(
                    ("batch_sources", "batch_edges_0", "batch_dst_0", "batch_edges_last", "batch_seeds"),
                    (p["sizes"] / max(1, n_batches)).tolist(),
                )
            )  # per batch, for an arithmetic estimate
        return row

    def result(self, history: list[dict], train_time: float) -> RunResult:
        """The scores of the best-validation weights, restored."""
        self.timer.remove()
        self.loop.restore()
        best = history[self.loop.best_epoch]
        metrics = {"train_acc": best["train_acc"], "train_loss": best["train_loss"]}
        for s in ("val", "test"):
            r = self.score(self.splits[s])
            metrics |= {
                f"{s}_acc": r["acc"],
                f"{s}_micro_f1": r["micro_f1"],
                f"{s}_macro_f1": r["macro_f1"],
                f"{s}_loss": r["loss"],
            }
        return RunResult(
            seed=self.seed,
            best_epoch=self.loop.best_epoch,
            epochs=len(history),
            metrics=metrics,
            history=history,
            relation_weights=self.model.relation_weights(),
            train_time_s=train_time,
            train_loss_blowup=self.loop.blowup.report,
        )
