"""Full-batch training of one run: Adam/SGD, early stopping on validation loss (or the scores a model's
released code stops on), test at the best epoch."""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from regnn.runtime import interrupt
from regnn.core.adjacency import at_least_fp32
from regnn.evaluation.metrics import f1_scores, split_scores
from regnn.names import LR_SCHEDULES, OPTIMIZERS, PRECISIONS
from regnn.training.loop import EpochLoop
from regnn.training.options import FullBatchOptions

log = logging.getLogger("regnn")


# what a run of every trainer reports (its record, from RunResult), which a cell's summary averages
RUN_KEYS = (
    "test_micro_f1",
    "test_macro_f1",
    "val_micro_f1",
    "val_macro_f1",
    "best_epoch",
    "epochs",
    "train_time_s",
    "epoch_time_s",
)


@dataclass
class RunResult:
    seed: int
    best_epoch: int
    epochs: int
    metrics: dict[str, float]  # train/val/test micro and macro F1 (percent) and losses at the best epoch
    history: list[dict] = field(default_factory=list)  # one row per epoch
    relation_weights: list[dict] = field(default_factory=list)  # per layer {relation: weight}
    train_time_s: float = 0.0
    embeddings: torch.Tensor | None = None  # the model's representations of every target node (clustering, t-SNE)
    train_loss_blowup: dict | None = None  # regnn.training.divergence.TrainLossBlowup's report, where it fired

    @classmethod
    def of(cls, loop, seed: int, history: list[dict], metrics: dict, train_time_s: float, **rest) -> "RunResult":
        """A run that `loop` trained: its best epoch is the loop's, its epochs the rows of its history."""
        best, epochs = loop.best_epoch, len(history)
        return cls(seed, best, epochs, metrics, history, train_time_s=train_time_s, **rest)


def make_optimizer(params, name: str = "adam", lr: float = 1e-3, weight_decay: float = 0.0, momentum: float = 0.0):
    """foreach: all parameters updated by one multi-tensor op per step of the rule (torch's default on CUDA; on
    CPU it loops over the tensors in Python, which costs per tensor: an IMDB RE-GCN step, 20 tensors, took 0.88
    ms that way and 0.71 ms this way here). The same numbers, bit for bit (tests/test_training.py)."""
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, foreach=True)
    if name == "adamw":  # decoupled weight decay (HGB's HGT)
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, momentum=momentum, foreach=True)
    raise ValueError(f"unknown optimizer {name!r} ({', '.join(OPTIMIZERS)})")


def autocast(precision: str, device) -> torch.autocast:
    """precision="bf16": dense matrix products in bfloat16 (AMX on recent Xeons, tensor cores on GPUs), sparse
    aggregation, attention and the loss in float32. "fp32": everything in float32."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be fp32 or bf16, got {precision!r}")
    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=precision == "bf16")


def make_schedule(opt, name: str, epochs: int):
    """constant; cosine: annealed from the optimizer's lr to lr/100 over `epochs` steps, one per epoch (R-HGNN's
    released schedule, CosineAnnealingLR with eta_min = lr / 100); onecycle: HGB's HGT schedule, OneCycleLR over
    `epochs` steps with the optimizer's lr as its peak, reached after 5% of them from lr/25, then a cosine down to
    lr/25e4 (torch's other defaults, the momentum cycle included)."""
    if name == "constant":
        return None
    lr = opt.param_groups[0]["lr"]
    if name == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs, eta_min=lr / 100)
    if name == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=epochs, pct_start=0.05)
    raise ValueError(f"unknown lr schedule {name!r} ({', '.join(LR_SCHEDULES)})")


class FullBatchStep:
    """One full-batch epoch: a training step on the whole graph, then the validation pass; the step function of
    the epoch loop (regnn.training.loop). Owns the optimizer and the lr schedule (a cosine schedule anneals over
    max_epochs), which a checkpoint keeps."""

    def __init__(self, model, inputs, feats, labels, splits, options: FullBatchOptions):
        self.model, self.inputs, self.feats, self.labels, self.idx = model, inputs, feats, labels, splits
        self.y = {s: labels[i] for s, i in splits.items()}
        self.opt = make_optimizer(model.parameters(), **options.optimizer)
        self.schedule = make_schedule(self.opt, options.lr_schedule, options.max_epochs)
        self.precision = options.precision

    def __call__(self, epoch: int) -> dict:
        model, idx, y, precision = self.model, self.idx, self.y, self.precision
        t = time.perf_counter()
        model.train()
        rows = getattr(model, "takes_rows", False)  # it computes only the scores the step reads
        with autocast(precision, self.labels.device):
            logits, _ = model(self.inputs, self.feats, **({"rows": idx["train"]} if rows else {}))
        loss = F.cross_entropy(at_least_fp32(logits[idx["train"]]), y["train"])
        extra = getattr(model, "auxiliary_loss", lambda: None)()  # a model's own training term (MAGNN-AC's)
        if extra is not None:
            loss = loss + extra
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        if self.schedule is not None:
            self.schedule.step()
        model.eval()
        with torch.no_grad(), autocast(precision, self.labels.device):
            logits, _ = model(self.inputs, self.feats, **({"rows": idx["val"]} if rows else {}))
            logits = at_least_fp32(logits)
            val_loss = F.cross_entropy(logits[idx["val"]], y["val"]).item()
            val = f1_scores(logits[idx["val"]], y["val"], logits.shape[1])
        return {
            "epoch": epoch,
            "train_loss": loss.item(),
            "val_loss": val_loss,
            "val_micro_f1": val["micro_f1"],
            "val_macro_f1": val["macro_f1"],
            "epoch_time_s": time.perf_counter() - t,
        }

    def state(self) -> dict:
        return {
            "optimizer": self.opt.state_dict(),
            "schedule": self.schedule.state_dict() if self.schedule is not None else None,
        }

    def load_state(self, state: dict) -> None:
        self.opt.load_state_dict(state["optimizer"])
        if self.schedule is not None:
            self.schedule.load_state_dict(state["schedule"])


def epochs(model, inputs, feats, labels, splits, options: FullBatchOptions):
    """Trains `model` one epoch per step of the generator, without end: yields each epoch's history row
    (losses, validation F1, epoch_time_s = one training step plus the validation pass); a benchmark can step two
    models in turn so both see the same machine conditions."""
    step = FullBatchStep(model, inputs, feats, labels, splits, options)
    for epoch in itertools.count():
        interrupt.check(f"before epoch {epoch}")
        yield step(epoch)


def _scores(model, inputs, feats, labels, splits, precision: str):
    """(every split's scores and loss, the target nodes' representations) of the model's current weights."""
    model.eval()
    with torch.no_grad(), autocast(precision, labels.device):
        logits, emb = model(inputs, feats, embed=True)
        logits, emb = at_least_fp32(logits), (at_least_fp32(emb) if emb is not None else None)
    metrics = split_scores(logits, labels, {s: splits[s] for s in ("train", "val", "test")})
    for s in ("train", "val", "test"):
        metrics[f"{s}_loss"] = F.cross_entropy(logits[splits[s]], labels[splits[s]]).item()
    return metrics, emb


def epoch_line(row: dict, history: list[dict], best_epoch: int, stop_on: tuple[str, ...] = ("val_loss",)) -> str:
    """An epoch's losses and validation Micro-F1, and the epoch the run keeps (the best by what early stopping
    watches, which need not be the best Micro-F1) with its Micro-F1, for the progress line."""
    best = history[best_epoch]["val_micro_f1"] if best_epoch < len(history) else row["val_micro_f1"]
    by = " and ".join(s.replace("_", " ") for s in stop_on) or "the last epoch"
    return (
        f"epoch {row['epoch']:3d} train {row['train_loss']:.4f} val {row['val_loss']:.4f} "
        f"val micro-F1 {row['val_micro_f1']:.2f}; kept: epoch {best_epoch} (best {by}), val micro-F1 {best:.2f}"
    )


def train_run(
    model,
    inputs,
    feats,
    labels,
    splits,
    *,
    seed: int,
    options: FullBatchOptions,
    on_epoch=None,
    progress=None,
    checkpoint=None,
) -> RunResult:
    """Trains `model` and returns the scores of its best-validation weights: those of the last epoch where
    every score in `stop_on` improved (the protocol: validation loss alone).

    model(inputs, feats, embed) gives the class scores of the target nodes; labels and splits index them.
    on_epoch(row) is called with each history row (for loggers). A non-finite loss or parameter raises
    regnn.training.divergence.Diverged. checkpoint (regnn.runs.resume.RunCheckpoint): mid-run checkpoints, and
    the run continued from one where it exists.
    """
    step = FullBatchStep(model, inputs, feats, labels, splits, options)
    rule = options.stop_rule()

    def report(row, best_epoch):
        if progress:
            line = epoch_line(row, loop.history, max(best_epoch, 0), rule.stop_on)
            progress.update(line, row["epoch"], max(best_epoch, 0))

    loop = EpochLoop(
        model,
        rule,
        int(labels.max()) + 1 if labels.numel() else 2,
        options.optimizer.get("lr"),
        on_epoch=on_epoch,
        report=report,
    )
    t0 = time.perf_counter()
    if checkpoint is not None:
        checkpoint.attach(model, step, loop)
    history = loop.run(step, checkpoint)
    train_time = time.perf_counter() - t0 + (checkpoint.trained_s if checkpoint is not None else 0.0)
    if progress:
        progress.close()
    loop.restore()
    metrics, emb = _scores(model, inputs, feats, labels, splits, options.precision)
    return RunResult.of(
        loop,
        seed,
        history,
        metrics,
        train_time,
        relation_weights=getattr(model, "relation_weights", list)(),
        train_loss_blowup=loop.blowup.report,
        embeddings=emb.detach().cpu() if emb is not None else None,
    )
