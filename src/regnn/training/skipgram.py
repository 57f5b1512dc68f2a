"""The trainer of Metapath2vec (regnn.models.baselines.metapath2vec): skip-gram passes over meta-path walks, then a
logistic-regression classifier; the same arguments and result as the epoch-by-epoch trainer, train_run."""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from regnn.evaluation.metrics import split_scores
from regnn.training.early_stopping import StopRule
from regnn.training.loop import EpochLoop
from regnn.training.trainer import RunResult


class WalkPass:
    """One skip-gram pass over meta-path walks from every target node (shuffled starts, batches of walks,
    SparseAdam): the step function of the epoch loop (regnn.training.loop)."""

    def __init__(self, model):
        o = model.fit_options
        self.model, self.sg, self.batch_size = model, model.skipgram, int(o.batch_size)
        self.opt = torch.optim.SparseAdam(list(self.sg.parameters()), lr=o.lr)
        self.starts = torch.arange(model.target_ids.numel())

    def __call__(self, epoch: int) -> dict:
        t, total, n = time.perf_counter(), 0.0, 0
        self.model.train()
        starts = self.starts[torch.randperm(self.starts.numel())]
        for traces in torch.split(self.sg.walks(starts), self.batch_size):
            u, v, neg = self.sg.pairs(traces)
            if u.numel() == 0:  # every walk of the batch ended at its start
                continue
            loss = self.sg(u, v, neg)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            total, n = total + loss.item(), n + 1
        return {"epoch": epoch, "train_loss": total / max(n, 1), "epoch_time_s": time.perf_counter() - t}


def fit(
    model, inputs, feats, labels, splits, *, seed: int, options=None, on_epoch=None, progress=None, checkpoint=None
) -> RunResult:
    """train_run's counterpart (its arguments; `options` is not read: the optimizer and the number of passes are
    the model's own settings; no mid-run checkpoint: its few walk passes take seconds, `checkpoint` is ignored):
    `walks_per_node` skip-gram passes through the epoch loop without early stopping, then sklearn's
    LogisticRegression on the training nodes; the scores of every split, as train_run reports them."""
    o = model.fit_options
    walks_per_node = int(o.walks_per_node)

    def report(row, best_epoch):
        if progress:
            progress.update(f"walk pass {row['epoch'] + 1}/{walks_per_node} skip-gram loss {row['train_loss']:.4f}")

    loop = EpochLoop(
        model,
        StopRule(walks_per_node, 0, ()),
        int(labels.max()) + 1 if labels.numel() else 2,
        o.lr,
        check_losses=False,
        on_epoch=on_epoch,
        report=report,
    )
    t0 = time.perf_counter()
    history = loop.run(WalkPass(model))
    if progress:
        progress.close()
    with torch.no_grad():
        emb = model.embeddings().detach().cpu()
    y = labels.cpu()
    _fit_classifier(model, emb, y, splits["train"].cpu(), o.classifier_c, seed)
    train_time = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        logits, _ = model(inputs, feats)
        logits = logits.cpu()
    metrics = split_scores(logits, y, {s: splits[s].cpu() for s in ("train", "val", "test")})
    for s in ("train", "val", "test"):
        i = splits[s].cpu()
        metrics[f"{s}_loss"] = F.cross_entropy(logits[i].log_softmax(-1).clamp(min=-1e4), y[i]).item()
    for row in history:  # the classifier's validation scores, one classifier: the same for every pass
        row |= {"val_micro_f1": metrics["val_micro_f1"], "val_macro_f1": metrics["val_macro_f1"]}
    return RunResult.of(loop, seed, history, metrics, train_time, embeddings=emb)


def _fit_classifier(model, emb: torch.Tensor, y: torch.Tensor, train: torch.Tensor, c: float, seed: int) -> None:
    """sklearn's LogisticRegression on the training nodes' embeddings, copied into the model's linear head."""
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=c, max_iter=1000, random_state=seed)
    clf.fit(emb[train].numpy(), y[train].numpy())
    dev = model.head.weight.device
    classes = torch.as_tensor(clf.classes_, device=dev)
    with torch.no_grad():  # classes absent from the training nodes keep -inf scores
        model.head.weight.zero_()
        model.head.bias.fill_(-torch.inf)
        coef = torch.as_tensor(clf.coef_, dtype=torch.float32, device=dev)
        bias = torch.as_tensor(clf.intercept_, dtype=torch.float32, device=dev)
        if len(classes) == 2:  # sklearn's binary form: one score for the second class
            coef, bias = torch.cat([torch.zeros_like(coef), coef]), torch.cat([torch.zeros_like(bias), bias])
        model.head.weight[classes] = coef
        model.head.bias[classes] = bias
