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

from regnn.errors import ConfigError
from regnn.evaluation.metrics import f1_scores
from regnn.training.distributed import Dist
from regnn.training.divergence import check_loss, check_parameters
from regnn.training.early_stopping import EarlyStopping
from regnn.training.sampling import SampledGraph, layerwise_logits, sampled_loader, sampled_logits
from regnn.training.trainer import RunResult, make_optimizer

log = logging.getLogger("regnn")
EVAL_MODES = ("sampled", "layerwise")


class Scorer:
    """Accuracy (ogb Evaluator, percent), Micro/Macro-F1 and loss of the target nodes `ids`, batched."""

    def __init__(self, model, sg: SampledGraph, labels: torch.Tensor, num_classes: int, mode: str = "sampled",
                 fanouts=(25, 20), batch_size: int = 4096, device="cpu", dist: Dist | None = None,
                 evaluator: str = "ogbn-mag"):
        from ogb.nodeproppred import Evaluator

        if mode not in EVAL_MODES:
            raise ValueError(f"evaluation mode must be one of {EVAL_MODES}, got {mode!r}")
        self.model, self.sg, self.labels, self.num_classes = model, sg, labels, num_classes
        self.mode, self.fanouts, self.batch_size, self.device = mode, list(fanouts), batch_size, device
        self.dist = dist or Dist()
        self.evaluator = Evaluator(evaluator)

    def __call__(self, ids: torch.Tensor) -> dict[str, float]:
        self.model.eval()
        mine = self.dist.shard(ids.numel())
        seeds = self.sg.seeds(ids[mine])
        if seeds.numel() == 0:
            logits = torch.zeros(0, self.num_classes)
        elif self.mode == "layerwise":
            logits = layerwise_logits(self.model, self.sg, seeds, self.batch_size, self.device)
        else:
            logits = sampled_logits(self.model, self.sg, seeds, self.fanouts, self.batch_size, self.device)
        y = self.labels[ids]
        pred = torch.zeros(ids.numel(), dtype=torch.int64)
        pred[mine] = logits.argmax(-1)
        loss = torch.tensor([F.cross_entropy(logits, y[mine], reduction="sum").item() if mine.numel() else 0.0])
        pred, loss = self.dist.all_sum(pred), self.dist.all_sum(loss)  # every position is filled by one process
        acc = self.evaluator.eval({"y_true": y.view(-1, 1), "y_pred": pred.view(-1, 1)})["acc"]
        onehot = F.one_hot(pred, self.num_classes).float()
        return {"acc": 100.0 * float(acc), **f1_scores(onehot, y, self.num_classes),
                "loss": float(loss.item()) / max(1, ids.numel())}


def train_minibatch_run(model, sg: SampledGraph, labels: torch.Tensor, splits: dict[str, torch.Tensor], *,
                        seed: int, num_classes: int, optimizer: dict, fanouts=(25, 20), batch_size: int = 1024,
                        eval: str = "sampled", eval_fanouts=None, eval_batch_size: int = 4096, max_epochs: int = 100,
                        patience: int = 10, max_batches: int | None = None, num_workers: int = 0,
                        embed_lr: float = 0.01, log_every: int = 50, device="cpu", dist: Dist | None = None,
                        evaluator: str = "ogbn-mag", on_epoch=None) -> RunResult:
    """Trains `model` (a SampledREGNN) and returns the scores of its best-validation-accuracy weights."""
    dist = dist or Dist()
    sparse = list(model.inputs.embeddings.parameters())
    if sparse and dist.backend == "nccl":
        raise ConfigError("learnable node embeddings have sparse gradients, which NCCL cannot all-reduce; use "
                          "trainer.ddp_backend=gloo, or features for every node type (dataset.featureless=mean|file)")
    net = model
    if dist.enabled:
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[torch.device(device).index] if torch.device(device).type == "cuda" else None,
            find_unused_parameters=True)  # a batch without some node type leaves its projection unused
    dense = [p for n, p in model.named_parameters() if not n.startswith("inputs.embeddings.")]
    opts = [make_optimizer(dense, **optimizer)] + ([torch.optim.SparseAdam(sparse, lr=embed_lr)] if sparse else [])
    loader = sampled_loader(sg, sg.seeds(splits["train"]), fanouts, batch_size, shuffle=True,
                            use_ddp=dist.enabled, num_workers=num_workers)
    score = Scorer(model, sg, labels, num_classes, eval, eval_fanouts or fanouts, eval_batch_size, device, dist,
                   evaluator)
    stopper, history = EarlyStopping(patience=patience), []
    n_batches = len(loader) if not max_batches else min(len(loader), max_batches)
    t_run = time.perf_counter()
    for epoch in range(max_epochs):
        model.train()
        t0 = time.perf_counter()
        seen = correct = 0
        loss_sum = 0.0
        for b, (input_nodes, output_nodes, blocks) in enumerate(loader):
            if b >= n_batches:
                break
            adjs = [sg.adjacency(blk, device) for blk in blocks]
            y = labels[output_nodes - sg.target_offset].to(device)
            logits = net(input_nodes, adjs)
            loss = F.cross_entropy(logits, y)
            for o in opts:
                o.zero_grad()
            loss.backward()
            for o in opts:
                o.step()
            seen += y.numel()
            batch_loss = loss.item()
            if not dist.enabled:  # under DDP every process checks the summed loss below, so all stop together
                check_loss(batch_loss, f"training loss of batch {b}", epoch, optimizer.get("lr"))
            loss_sum += batch_loss * y.numel()
            correct += int((logits.argmax(-1) == y).sum())
            if log_every and (b + 1) % log_every == 0:
                dt = time.perf_counter() - t0
                log.info("epoch %d batch %d/%d: loss %.4f, %.0f seeds/s%s", epoch, b + 1, n_batches,
                         loss_sum / seen, seen / dt, f" (rank {dist.rank})" if dist.enabled else "")
        train_s = time.perf_counter() - t0
        totals = dist.all_sum(torch.tensor([seen, correct, loss_sum], dtype=torch.float64))
        wall = dist.all_max(train_s)
        check_loss(float(totals[2]), "training loss", epoch, optimizer.get("lr"))
        check_parameters(model, epoch, optimizer.get("lr"))
        val = score(splits["val"])
        check_loss(val["loss"], "validation loss", epoch, optimizer.get("lr"))
        row = {"epoch": epoch, "train_loss": float(totals[2] / totals[0]), "train_acc": 100.0 * float(totals[1] / totals[0]),
               "val_loss": val["loss"], "val_acc": val["acc"], "val_micro_f1": val["micro_f1"],
               "val_macro_f1": val["macro_f1"], "seeds": int(totals[0]), "batches": n_batches,
               "seeds_per_s": float(totals[0]) / wall, "train_time_s": wall,
               "epoch_time_s": time.perf_counter() - t0}
        history.append(row)
        if on_epoch:
            on_epoch(row)
        log.info("epoch %d: train loss %.4f acc %.2f | val acc %.2f | %.0f seeds/s, %.1fs (best epoch %d)", epoch,
                 row["train_loss"], row["train_acc"], row["val_acc"], row["seeds_per_s"], row["epoch_time_s"],
                 epoch if row["val_acc"] > -stopper.best_loss else stopper.best_epoch)
        if stopper.step(-val["acc"], epoch, model):
            break
    train_time = time.perf_counter() - t_run
    stopper.restore(model)
    best = history[stopper.best_epoch]
    metrics = {"train_acc": best["train_acc"], "train_loss": best["train_loss"]}
    for s in ("val", "test"):
        r = score(splits[s])
        metrics |= {f"{s}_acc": r["acc"], f"{s}_micro_f1": r["micro_f1"], f"{s}_macro_f1": r["macro_f1"],
                    f"{s}_loss": r["loss"]}
    return RunResult(seed=seed, best_epoch=stopper.best_epoch, epochs=len(history), metrics=metrics,
                     history=history, relation_weights=model.relation_weights(), train_time_s=train_time)
