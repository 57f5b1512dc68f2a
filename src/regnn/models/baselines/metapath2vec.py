"""Metapath2vec (Dong et al., KDD 2017): skip-gram with negative sampling over meta-path guided random walks,
then a logistic-regression classifier (sklearn) on the training nodes' embeddings.

The embeddings are trained once per seed, without labels; there is no epoch-by-epoch training of a classifier
and so no early stopping: its trainer (regnn.training.skipgram, in place of regnn.training.trainer.train_run) runs
`walks_per_node` passes over the target nodes (one walk from each per pass), then fits the classifier. The fitted
classifier is copied into a linear layer, so the model's forward pass gives its class scores like any model's.

The skip-gram is DGL's `dgl.nn.MetaPath2Vec` written out: the same parameters drawn in the same order (a seed
gives the same initial embeddings), the same loss, and the same negative-sampling distribution for the same walks
(frequency^0.75 of the nodes over one walk from every start node, where a node counts once per walk and, as in
DGL, the -1 of a walk that ends early counts for the last node of its type). The walks are this module's own
(`metapath_walk`: the next node drawn uniformly among the current node's out-edges of the step's relation, -1
from a dead end on, as DGL's random_walk) on a torch.Generator: the same process as DGL's, not the same draws.
DGL's `sample` is not followed: it pairs nodes in Python one by one (most of an epoch's time on DBLP), maps the -1
of a walk that ends early to the last node of the type (dmlc/dgl#5514: pairs that are not in the graph), and its
window skips a context node and pairs each node with itself once walks are longer than the window (it compares a
slice position with a walk position). Here: every pair of valid walk nodes at most `window` steps apart, in both
directions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from regnn.models.baselines.metapath import check_metapath

Csr = tuple[torch.Tensor, torch.Tensor]  # (indptr over the source nodes, destination of every out-edge)


def relation_csr(g, relation: str) -> Csr:
    """The out-edges of every source node of one relation of the heterograph (parallel edges kept: each is a
    step the walk can take)."""
    src_t, _, _ = g.to_canonical_etype(relation)
    u, v = g.edges(etype=relation)
    order = torch.sort(u, stable=True).indices
    counts = torch.bincount(u, minlength=g.num_nodes(src_t))
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)]), v[order]


def metapath_walk(steps: list[Csr], starts: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """(len(starts), len(steps) + 1) node ids of one walk from every start: step i moves from the current node to
    the destination of one of its out-edges in steps[i], drawn uniformly; a node without one ends the walk, and
    the rest of its trace is -1 (as DGL's random_walk with a meta-path). One uniform draw per walk and step, dead
    or alive, so a walk's draws do not depend on the others'."""
    cur = torch.as_tensor(starts, dtype=torch.int64).clone()
    trace = [cur]
    for indptr, indices in steps:
        at = cur.clamp(min=0)
        first = indptr[at]
        degree = torch.where(cur >= 0, indptr[at + 1] - first, 0)
        draw = torch.rand(cur.shape, dtype=torch.float64, generator=generator)
        pick = torch.minimum((draw * degree).to(torch.int64), (degree - 1).clamp(min=0))  # u * d rounds up to d
        moves = degree > 0
        cur = torch.full_like(cur, -1)
        cur[moves] = indices[first[moves] + pick[moves]]
        trace.append(cur)
    return torch.stack(trace, 1)


def context_pairs(nodes: torch.Tensor, valid: torch.Tensor, window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(centre, context) of every pair of valid positions at most `window` apart in a row of `nodes`, both ways:
    for d = 1..window, the pairs d apart left to right, then the same pairs right to left."""
    us, vs = [], []
    for d in range(1, window + 1):
        ok = valid[:, :-d] & valid[:, d:]
        a, b = nodes[:, :-d][ok], nodes[:, d:][ok]
        us += [a, b]
        vs += [b, a]
    empty = nodes.new_zeros(0)
    return (torch.cat(us), torch.cat(vs)) if us else (empty, empty)


def negative_distribution(
    traces: torch.Tensor, walk_offset: torch.Tensor, walk_last: torch.Tensor, num_nodes: int, dtype=None
) -> torch.Tensor:
    """DGL MetaPath2Vec's negative-sampling distribution from its walks: (number of walks a node appears in)^0.75,
    normalised. traces: walks of local ids (-1 after a dead end), walk_offset / walk_last: the first global id and
    the last local id of the node type at every walk position (DGL's walks count a -1 for that last node)."""
    ids = torch.where(traces >= 0, traces, walk_last) + walk_offset
    ids = torch.sort(ids, 1).values
    first = torch.ones_like(ids, dtype=torch.bool)
    first[:, 1:] = ids[:, 1:] != ids[:, :-1]  # a node counts once per walk
    freq = torch.bincount(ids[first], minlength=num_nodes).to(dtype or torch.get_default_dtype())
    prob = freq.pow(0.75)
    return prob / prob.sum()


@dataclass
class WalkInputs:
    steps: list[Csr]  # per walk step: the out-edges of its relation
    walk: list[str]  # the meta-path's relations repeated to the walk length
    node_types: list[str]  # the node type at every walk position (len(walk) + 1)
    num_nodes: dict[str, int]  # every node type of the graph, in its order: the blocks of the embedding tables
    target: str
    metapath: str

    @classmethod
    def build(cls, data, device="cpu", metapaths=None, metapath=None, walk_length=100, **_model_options):
        if not isinstance(metapaths, dict) or metapath not in metapaths:
            raise ValueError(
                f"model.metapath={metapath!r} is not valid: use one of {list(metapaths or {})} or best "
                "(set dataset.metapaths)"
            )
        rels = list(metapaths[metapath])
        cets = check_metapath(data.graph, metapath, rels, endpoint=data.target)
        repeats = max(1, int(walk_length) // len(rels))
        csr = {r: relation_csr(data.graph, r) for r in rels}  # on the CPU: the walks run there
        g = data.graph
        return cls(
            [csr[r] for r in rels * repeats],
            rels * repeats,
            [c[0] for c in cets * repeats] + [data.target],
            {t: g.num_nodes(t) for t in g.ntypes},
            data.target,
            metapath,
        )


class SkipGram(nn.Module):
    """DGL's MetaPath2Vec (module docstring): node_embed (centres) and context_embed tables over every node of
    the graph, numbered type by type in the graph's order; `sample` gives a batch's pairs and negatives."""

    def __init__(self, inputs: WalkInputs, window: int, emb_dim: int, negative_size: int):
        super().__init__()
        if window > len(inputs.walk) + 1:
            raise ValueError(f"model.window={window} is longer than the walks ({len(inputs.walk)} steps)")
        self.window_size, self.negative_size, self.steps = window, negative_size, inputs.steps
        offsets, start = {}, 0
        for t, n in inputs.num_nodes.items():
            offsets[t], start = start, start + n
        self.offsets = offsets
        self.walk_offset = torch.tensor([offsets[t] for t in inputs.node_types])
        num_nodes = start
        self.node_embed = nn.Embedding(num_nodes, emb_dim, sparse=True)
        self.context_embed = nn.Embedding(num_nodes, emb_dim, sparse=True)
        nn.init.uniform_(self.node_embed.weight.data, -1.0 / emb_dim, 1.0 / emb_dim)
        nn.init.constant_(self.context_embed.weight.data, 0.0)
        # the walks and negatives draw from their own generator, seeded from the global one after the weights
        self.generator = torch.Generator().manual_seed(int(torch.randint(2**62, ())))
        traces = metapath_walk(self.steps, torch.arange(inputs.num_nodes[inputs.node_types[0]]), self.generator)
        last = torch.tensor([inputs.num_nodes[t] - 1 for t in inputs.node_types])
        self.neg_prob = negative_distribution(traces, self.walk_offset, last, num_nodes)

    def walks(self, starts: torch.Tensor) -> torch.Tensor:
        """One walk from each start (metapath_walk's traces). A pass walks from all its starts in one call and
        batches the traces: a walk's steps are a few small tensor operations each, too slow batch by batch."""
        return metapath_walk(self.steps, starts, self.generator)

    def sample(self, indices: torch.Tensor):
        """(centres, contexts, negatives (pairs, negative_size)) of one walk from each of `indices`."""
        return self.pairs(self.walks(indices))

    def pairs(self, traces: torch.Tensor):
        """(centres, contexts, negatives (pairs, negative_size)) of the given walks."""
        u, v = context_pairs(traces + self.walk_offset, traces >= 0, self.window_size)
        neg = (
            torch.multinomial(self.neg_prob, u.numel() * self.negative_size, replacement=True, generator=self.generator)
            if u.numel()
            else u.new_zeros(0)
        )
        device = self.node_embed.weight.device
        return u.to(device), v.to(device), neg.view(-1, self.negative_size).to(device)

    def forward(self, pos_u: torch.Tensor, pos_v: torch.Tensor, neg_v: torch.Tensor) -> torch.Tensor:
        """mean over pairs of -log s(u . v) - sum over negatives n of log s(-u . n), each score clamped to
        [-10, 10] (s: the sigmoid; u from node_embed, v and n from context_embed)."""
        emb_u = self.node_embed(pos_u)
        score = torch.clamp((emb_u * self.context_embed(pos_v)).sum(1), min=-10, max=10)
        neg_score = torch.bmm(self.context_embed(neg_v), emb_u.unsqueeze(2)).squeeze(2)
        neg_score = torch.clamp(neg_score, min=-10, max=10)
        return torch.mean(-F.logsigmoid(score) - F.logsigmoid(-neg_score).sum(1))


@dataclass(frozen=True)
class WalkFit:
    """How Metapath2Vec is fitted (regnn.training.skipgram): skip-gram passes, walks per batch, SparseAdam's
    learning rate, then the inverse regularisation of the logistic-regression classifier."""

    walks_per_node: int
    batch_size: int
    lr: float
    classifier_c: float


class Metapath2Vec(nn.Module):
    def __init__(self, inputs: WalkInputs, num_classes: int, *, hidden: int, window: int, negatives: int, **fit):
        """fit: WalkFit's fields."""
        super().__init__()
        self.target = inputs.target
        self.fit_options = WalkFit(**fit)
        self.skipgram = SkipGram(inputs, window, hidden, negatives)
        target_ids = self.skipgram.offsets[inputs.target] + torch.arange(inputs.num_nodes[inputs.target])
        self.register_buffer("target_ids", target_ids, persistent=False)
        self.head = nn.Linear(hidden, num_classes).requires_grad_(False)  # the fitted classifier

    @classmethod
    def from_inputs(
        cls,
        inputs: WalkInputs,
        in_dims,
        num_classes,
        metapaths=None,
        metapath=None,
        walk_length=None,
        metapath_select_runs=None,
        dropout=None,
        **kwargs,
    ) -> "Metapath2Vec":
        return cls(inputs, num_classes, **kwargs)

    def embeddings(self) -> torch.Tensor:
        return self.skipgram.node_embed.weight[self.target_ids]

    def forward(self, inputs, feats=None, embed: bool = False):
        h = self.embeddings()
        return self.head(h), (h if embed else None)
