"""Metapath2vec (Dong et al., KDD 2017): skip-gram with negative sampling over meta-path guided random walks
(DGL's `dgl.nn.MetaPath2Vec`), then a logistic-regression classifier (sklearn) on the training nodes' embeddings.

The embeddings are trained once per seed, without labels; there is no epoch-by-epoch training of a classifier
and so no early stopping: `fit` (the arch's trainer, in place of regnn.training.trainer.train_run) runs
`walks_per_node` passes over the target nodes (one walk from each per pass), then fits the classifier. The fitted
classifier is copied into a linear layer, so the model's forward pass gives its class scores like any model's.

DGL's `MetaPath2Vec.sample` is replaced (the walks, the loss and the negative-sampling distribution stay DGL's):
it pairs nodes in Python one by one (most of an epoch's time on DBLP), maps the -1 of a walk that ends early to
the last node of the type (dmlc/dgl#5514: pairs that are not in the graph), and its window skips a context node
and pairs each node with itself once walks are longer than the window (it compares a slice position with a walk
position). Here: every pair of valid walk nodes at most `window` steps apart, in both directions.
"""
from __future__ import annotations

import contextlib
import io
import time
from dataclasses import dataclass

import dgl
import numpy as np
import torch
import torch.nn.functional as F
from dgl.nn import MetaPath2Vec
from torch import nn

from regnn.errors import ConfigError
from regnn.evaluation.metrics import f1_scores
from regnn.models.baselines.metapath import check_metapath
from regnn.training.trainer import RunResult


@dataclass
class WalkInputs:
    graph: dgl.DGLHeteroGraph  # on the CPU: DGL's random walks
    walk: list[str]  # the meta-path's relations repeated to the walk length
    target: str
    metapath: str

    @classmethod
    def build(cls, data, device="cpu", metapaths=None, metapath=None, walk_length=100, **_model_options):
        if not isinstance(metapaths, dict) or metapath not in metapaths:
            raise ConfigError(f"model.metapath={metapath!r} is not valid: use one of {list(metapaths or {})} or best "
                              "(set dataset.metapaths)")
        rels = list(metapaths[metapath])
        check_metapath(data.graph, metapath, rels, endpoint=data.target)
        repeats = max(1, int(walk_length) // len(rels))
        g = dgl.heterograph({cet: data.graph.edges(etype=cet) for cet in data.graph.canonical_etypes},
                            {t: data.graph.num_nodes(t) for t in data.graph.ntypes})  # structure only
        return cls(g, rels * repeats, data.target, metapath)


class SkipGram(MetaPath2Vec):
    """DGL's MetaPath2Vec with a vectorised `sample` that keeps only valid walk nodes (module docstring)."""

    def __init__(self, g, walk, window, emb_dim, negative_size):
        with contextlib.redirect_stderr(io.StringIO()):  # the constructor's per-node progress bar
            super().__init__(g, walk, window, emb_dim, negative_size, sparse=True)
        offsets = {t: int(self.local_to_global_nid[t][0]) if len(self.local_to_global_nid[t]) else 0
                   for t in g.ntypes}  # to_homogeneous numbers the nodes type by type
        self.walk_offset = torch.tensor([offsets[t] for t in self.node_metapath])  # CPU, as the walks

    def sample(self, indices):
        traces, _ = dgl.sampling.random_walk(self.hg, torch.as_tensor(indices), metapath=self.metapath)
        valid = traces >= 0
        nodes = traces + self.walk_offset
        us, vs = [], []
        for d in range(1, self.window_size + 1):
            ok = valid[:, :-d] & valid[:, d:]
            a, b = nodes[:, :-d][ok], nodes[:, d:][ok]
            us += [a, b]
            vs += [b, a]
        u, v = torch.cat(us), torch.cat(vs)
        neg = torch.multinomial(self.neg_prob, u.numel() * self.negative_size, replacement=True)
        device = self.node_embed.weight.device
        return u.to(device), v.to(device), neg.view(-1, self.negative_size).to(device)


class Metapath2Vec(nn.Module):
    def __init__(self, *, graph, walk: list[str], target: str, num_classes: int, hidden: int = 128, window: int = 7,
                 negatives: int = 5, walks_per_node: int = 40, batch_size: int = 32, lr: float = 0.025,
                 classifier_c: float = 1.0):
        super().__init__()
        self.target = target
        self.fit_options = {"walks_per_node": walks_per_node, "batch_size": batch_size, "lr": lr,
                            "classifier_c": classifier_c}
        self.skipgram = SkipGram(graph, walk, window, hidden, negatives)
        self.register_buffer("target_ids", torch.tensor(self.skipgram.local_to_global_nid[target]), persistent=False)
        self.head = nn.Linear(hidden, num_classes).requires_grad_(False)  # the fitted classifier

    @classmethod
    def from_inputs(cls, inputs: WalkInputs, in_dims, num_classes, metapaths=None, metapath=None, walk_length=None,
                    metapath_select_runs=None, dropout=None, **kwargs) -> "Metapath2Vec":
        return cls(graph=inputs.graph, walk=inputs.walk, target=inputs.target, num_classes=num_classes, **kwargs)

    def embeddings(self) -> torch.Tensor:
        return self.skipgram.node_embed.weight[self.target_ids]

    def forward(self, inputs, feats=None, embed: bool = False):
        h = self.embeddings()
        return self.head(h), (h if embed else None)


def fit(model: Metapath2Vec, inputs, feats, labels, splits, *, seed: int, on_epoch=None, progress=None,
        **_trainer_options) -> RunResult:
    """train_run's counterpart (its arguments; the optimizer and epoch settings are the model's own): skip-gram
    for `walks_per_node` passes (shuffled start nodes, batches of walks, SparseAdam), then sklearn's
    LogisticRegression on the training nodes; the scores of every split, as train_run reports them."""
    from sklearn.linear_model import LogisticRegression

    o = model.fit_options
    walks_per_node, batch_size = int(o["walks_per_node"]), int(o["batch_size"])
    sg = model.skipgram
    opt = torch.optim.SparseAdam(list(sg.parameters()), lr=o["lr"])
    starts = torch.arange(model.target_ids.numel())
    history = []
    t0 = time.perf_counter()
    for epoch in range(walks_per_node):
        t, total, n = time.perf_counter(), 0.0, 0
        model.train()
        for batch in torch.split(starts[torch.randperm(starts.numel())], batch_size):
            u, v, neg = sg.sample(batch)
            if u.numel() == 0:  # every walk of the batch ended at its start
                continue
            loss = sg(u, v, neg)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + loss.item(), n + 1
        row = {"epoch": epoch, "train_loss": total / max(n, 1), "epoch_time_s": time.perf_counter() - t}
        history.append(row)
        if on_epoch:
            on_epoch(row)
        if progress:
            progress.update(f"walk pass {epoch + 1}/{walks_per_node} skip-gram loss {row['train_loss']:.4f}")
    if progress:
        progress.close()
    with torch.no_grad():
        emb = model.embeddings().detach().cpu()
    y = labels.cpu()
    clf = LogisticRegression(C=o["classifier_c"], max_iter=1000, random_state=seed)
    clf.fit(emb[splits["train"].cpu()].numpy(), y[splits["train"].cpu()].numpy())
    classes = torch.as_tensor(clf.classes_)
    with torch.no_grad():  # classes absent from the training nodes keep -inf scores
        model.head.weight.zero_()
        model.head.bias.fill_(-torch.inf)
        coef = torch.as_tensor(clf.coef_, dtype=torch.float32)
        bias = torch.as_tensor(clf.intercept_, dtype=torch.float32)
        if len(classes) == 2:  # sklearn's binary form: one score for the second class
            coef, bias = torch.cat([torch.zeros_like(coef), coef]), torch.cat([torch.zeros_like(bias), bias])
        model.head.weight[classes] = coef
        model.head.bias[classes] = bias
    train_time = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        logits, _ = model(inputs, feats)
        logits = logits.cpu()
    metrics = {}
    for s in ("train", "val", "test"):
        i = splits[s].cpu()
        metrics |= {f"{s}_{k}": v for k, v in f1_scores(logits[i], y[i], logits.shape[1]).items()}
        metrics[f"{s}_loss"] = F.cross_entropy(logits[i].log_softmax(-1).clamp(min=-1e4), y[i]).item()
    for row in history:  # the classifier's validation scores, one classifier: the same for every pass
        row |= {"val_micro_f1": metrics["val_micro_f1"], "val_macro_f1": metrics["val_macro_f1"]}
    return RunResult(seed=seed, best_epoch=walks_per_node - 1, epochs=walks_per_node, metrics=metrics,
                     history=history, train_time_s=train_time, embeddings=emb)
