"""Inference on blocks: exact class scores and representations with every neighbour, one layer at a time
(layerwise_*, for graphs too large for one pass), scores on sampled neighbourhoods (sampled_logits), and the
mini-batch trainer's evaluation of a split with either (Scorer)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from regnn.core.adjacency import Adjacency
from regnn.evaluation.metrics import f1_scores
from regnn.training.distributed import Dist
from regnn.training.options import MinibatchOptions
from regnn.training.sampling import SampledGraph, sampled_loader, to_device

EVAL_MODES = ("sampled", "layerwise")


def layer_step(regnn, i: int, adj: Adjacency, h: torch.Tensor, alphas: list | None = None) -> torch.Tensor:
    """Layer i of an REGNN in evaluation mode (the same computation as REGNN.propagate with dropout off);
    alphas: regnn.layer_alphas(), computed once by a caller that steps many batches."""
    return regnn.convs[i](h, adj, alpha=(regnn.layer_alphas() if alphas is None else alphas)[i])


@torch.no_grad()
def layerwise_logits(
    model, sg: SampledGraph, seeds: torch.Tensor, batch_size: int = 4096, device="cpu"
) -> torch.Tensor:
    """Exact class scores of `seeds` with every neighbour (no sampling), one layer at a time."""
    return layerwise_outputs(model, sg, seeds, batch_size, device)[0]


@torch.no_grad()
def layerwise_outputs(
    model, sg: SampledGraph, seeds: torch.Tensor, batch_size: int = 4096, device="cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """(class scores, representations) of `seeds` with every neighbour (no sampling), one layer at a time; the
    representation is the one REGNN.propagate(embed=True) returns: the classifier's input.

    Layer l is computed only for the nodes the layers above need: the seeds at the top, and each layer below adds
    the in-neighbours of the layer above. Each layer's output is held for those nodes only (memory: nodes x
    hidden floats of the widest layer); inputs of the first layer are projected batch by batch.
    """
    regnn = model.regnn
    num_layers = len(regnn.convs)
    needed = [seeds]
    for _ in range(num_layers - 1):  # needed[k]: nodes whose output of layer L-k is used
        needed.append(torch.unique(torch.cat([needed[-1], sg.in_neighbours(needed[-1])])))
    needed = needed[::-1]  # needed[l]: nodes whose layer-l output is computed (l = 0 .. L-1)
    prev, pos = None, torch.full((sg.num_nodes,), -1, dtype=torch.int64)
    alphas = regnn.layer_alphas()
    for layer, nodes in enumerate(needed):
        out = None
        for start in range(0, nodes.numel(), batch_size):
            dst = nodes[start : start + batch_size]
            block = sg.full_block(dst)
            src = block.src_nodes
            h = model.input_rows(src.to(device)) if layer == 0 else prev[pos[src]].to(device)
            y = layer_step(regnn, layer, sg.adjacency(block, device), h, alphas)
            if out is None:
                out = torch.empty(nodes.numel(), y.shape[1], dtype=y.dtype)
            out[start : start + dst.numel()] = y.cpu()
        pos.fill_(-1)
        pos[nodes] = torch.arange(nodes.numel())
        prev = out
        if layer == num_layers - 2:  # the last layer's input: the representation where there is no head
            before_last = prev[pos[seeds]]
    h = prev[pos[seeds]].to(device)
    if regnn.head is None:
        emb = before_last if num_layers > 1 else model.input_rows(seeds.to(device)).cpu()
        return h.cpu(), emb
    represent = getattr(regnn.head, "represent", None)
    return regnn.head(h).cpu(), (represent(h) if represent is not None else h).cpu()


@torch.no_grad()
def sampled_logits(
    model,
    sg: SampledGraph,
    seeds: torch.Tensor,
    fanouts: list[int],
    batch_size: int,
    device="cpu",
    sampling: str = "deterministic",
    seed: int = 0,
) -> torch.Tensor:
    """Class scores of `seeds` (in their order) with sampled neighbourhoods (the same ones for the same seed)."""
    out = []
    for b in sampled_loader(sg, seeds, fanouts, batch_size, shuffle=False, sampling=sampling, seed=seed, stream="eval"):
        out.append(model(b.input_nodes, to_device(b.adjs, device)).cpu())
    return torch.cat(out)


class Scorer:
    """Accuracy (ogb Evaluator, percent), Micro/Macro-F1 and loss of the target nodes `ids`, batched."""

    def __init__(
        self,
        model,
        sg: SampledGraph,
        labels: torch.Tensor,
        num_classes: int,
        options: MinibatchOptions,
        *,
        device="cpu",
        dist: Dist | None = None,
        seed: int,
    ):
        from ogb.nodeproppred import Evaluator

        if options.eval not in EVAL_MODES:
            raise ValueError(f"evaluation mode must be one of {EVAL_MODES}, got {options.eval!r}")
        self.model, self.sg, self.labels, self.num_classes = model, sg, labels, num_classes
        self.mode, self.fanouts, self.batch_size = options.eval, list(options.eval_fanouts), options.eval_batch_size
        self.device, self.sampling, self.seed = device, options.sampling, seed  # the same draws every call
        self.dist = dist or Dist()
        self.evaluator = Evaluator(options.evaluator)

    def __call__(self, ids: torch.Tensor) -> dict[str, float]:
        self.model.eval()
        mine = self.dist.shard(ids.numel())
        seeds = self.sg.seeds(ids[mine])
        if seeds.numel() == 0:
            logits = torch.zeros(0, self.num_classes)
        elif self.mode == "layerwise":
            logits = layerwise_logits(self.model, self.sg, seeds, self.batch_size, self.device)
        else:
            logits = sampled_logits(
                self.model, self.sg, seeds, self.fanouts, self.batch_size, self.device, self.sampling, self.seed
            )
        y = self.labels[ids]
        pred = torch.zeros(ids.numel(), dtype=torch.int64)
        pred[mine] = logits.argmax(-1)
        loss = torch.tensor([F.cross_entropy(logits, y[mine], reduction="sum").item() if mine.numel() else 0.0])
        pred, loss = self.dist.all_sum(pred), self.dist.all_sum(loss)  # every position is filled by one process
        acc = self.evaluator.eval({"y_true": y.view(-1, 1), "y_pred": pred.view(-1, 1)})["acc"]
        onehot = F.one_hot(pred, self.num_classes).float()
        return {
            "acc": 100.0 * float(acc),
            **f1_scores(onehot, y, self.num_classes),
            "loss": float(loss.item()) / max(1, ids.numel()),
        }
