"""MAGNN (Fu et al., WWW 2020): meta-path instance encoders, intra- and inter-meta-path attention.

Per meta-path P of the target type (dataset.metapaths):
- instance encoding with the relational rotation encoder (the paper's RotatE variant, the authors' `RotatE0`):
  the hidden vector of every node is read as D/2 complex numbers; node n_i of an instance (n_0, ..., n_l = v) is
  rotated by the product of the unit rotations of the relations on its way to v, then the instance is the mean
  over its nodes. A relation and its reverse share one rotation, the reverse conjugated (so the end node is never
  rotated and on a symmetric path such as APA the first node is not either). The rotation of a position is the
  same for every instance, so each node type is rotated once per position and the instances gather rows;
- intra-meta-path attention, per head k: e = LeakyReLU(a_k^T [h_v || h_P(v, u)]) over the instances ending at v,
  softmax, attention dropout, sum of the instance encodings (the instances of nodes with similar counts padded
  side by side, so the sums are batched matrix products); ELU; the heads concatenated;
- inter-meta-path (semantic) attention as HAN's: beta_P = softmax_P(q^T mean_v tanh(M h_v^P + b)).
Then a linear classifier; the representation for clustering is the fused vector before it, as the authors' code
returns it. Every node type on a meta-path has its own input projection, with feature dropout after it.

One layer with the target type at the centre, as the authors' DBLP script. Instances come from
`metapath_instances`: all of them where a target node has at most `max_instances`, else that many drawn with the
seed `sample_seed`, once per job (the authors' DBLP script draws 100 per node and mini-batch afresh, weighing a
neighbour's instances by count^-1/4; here every instance is equally likely and full-batch training keeps one draw).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from regnn.data.hetero import HeteroGraph
from regnn.models.baselines.han import SemanticAttention
from regnn.models.baselines.metapath import check_metapath
from regnn.models.baselines.metapath_instances import metapath_instances
from regnn.models.stack import StackShape
from regnn.nn.projection import TypeProjection


def reverse_pairs(g: HeteroGraph) -> dict[str, tuple[int, bool]]:
    """relation name -> (rotation index, conjugated): a relation and its reverse (the same edges, turned
    round) share an index; the reverse, the later name in sorted order, is conjugated."""

    def keys(cet, flip):
        u, v = (x.numpy().astype(np.int64) for x in g.edges(etype=cet))
        u, v = (v, u) if flip else (u, v)
        return np.unique(u * g.num_nodes(cet[2] if not flip else cet[0]) + v)

    out: dict[str, tuple[int, bool]] = {}
    for cet in sorted(g.canonical_etypes, key=lambda c: c[1]):
        if cet[1] in out:
            continue
        idx = len({i for i, _ in out.values()})
        out[cet[1]] = (idx, False)
        mine = keys(cet, False)
        for other in g.canonical_etypes:
            if (
                other[1] not in out
                and other[0] == cet[2]
                and other[2] == cet[0]
                and np.array_equal(keys(other, True), mine)
            ):
                out[other[1]] = (idx, True)
                break
    return out


def pad_by_end(instances: torch.Tensor, num_ends: int) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The instances of each end node side by side, in buckets of nodes with similar counts: per bucket the node
    ids (n,), their instances (n, K, l + 1) (K: the bucket's largest count, a power of two or the largest count
    overall) and the (n, K) mask of the real ones. One padded block for all nodes would mostly hold padding
    (IMDB's MAM: 95k instances, 4274 nodes x 100 slots). Instances must be ordered by end node; nodes without
    any are in no bucket. Padded slots point at node 0 (and the node itself), masked."""
    ends = instances[:, -1]
    counts = torch.bincount(ends, minlength=num_ends)
    slot = torch.arange(ends.numel()) - (torch.cumsum(counts, 0) - counts)[ends]
    level = torch.ceil(torch.log2(counts.clamp(min=1).double())).long()
    out = []
    for lv in torch.unique(level[counts > 0]).tolist():
        ids = torch.nonzero((level == lv) & (counts > 0)).squeeze(1)
        k = int(counts[ids].max())
        pos = torch.full((num_ends,), -1, dtype=torch.int64)
        pos[ids] = torch.arange(ids.numel())
        mine = pos[ends] >= 0
        padded = torch.zeros(ids.numel(), k, instances.shape[1], dtype=torch.int64)
        padded[:, :, -1] = ids.unsqueeze(1)
        mask = torch.zeros(ids.numel(), k, dtype=torch.bool)
        padded[pos[ends[mine]], slot[mine]] = instances[mine]
        mask[pos[ends[mine]], slot[mine]] = True
        out.append((ids, padded, mask))
    return out


@dataclass
class MetapathInstances:
    buckets: dict[str, list]  # meta-path -> [(target ids, their instances (n, K, l + 1), mask (n, K))] (pad_by_end)
    ntypes: dict[str, list[str]]  # meta-path -> node type at each position
    rotations: dict[str, list[tuple[int, bool]]]  # meta-path -> (rotation index, conjugated) per relation
    num_rotations: int
    target: str

    @classmethod
    def build(cls, data, device="cpu", metapaths=None, max_instances=100, sample_seed=0, **_model_options):
        if not isinstance(metapaths, dict) or not metapaths:
            raise ValueError(
                "model.metapaths must map meta-path names to relation lists (set dataset.metapaths, "
                f"e.g. APA: [author->paper, paper->author]); got {metapaths!r}"
            )
        if max_instances is not None and (not isinstance(max_instances, int) or max_instances < 1):
            raise ValueError(
                f"model.max_instances={max_instances!r} is not valid: use a whole number >= 1 "
                "(instances kept per target node), or null for all of them"
            )
        g, n = data.graph, data.graph.num_nodes(data.target)
        rot = reverse_pairs(g)
        out = {k: {} for k in ("buckets", "ntypes", "rotations")}
        for name, rels in metapaths.items():
            cets = check_metapath(g, name, rels, endpoint=data.target)
            inst = torch.from_numpy(metapath_instances(g, list(rels), max_instances, sample_seed, name))
            out["buckets"][name] = [tuple(x.to(device) for x in b) for b in pad_by_end(inst, n)]
            out["ntypes"][name] = [cets[0][0]] + [c[2] for c in cets]
            out["rotations"][name] = [rot[r] for r in rels]
        return cls(**out, num_rotations=len({i for i, _ in rot.values()}), target=data.target)

    def projected_types(self) -> list[str]:
        """The node types whose features the model projects: those on the meta-paths."""
        return sorted({t for ts in self.ntypes.values() for t in ts})


class RotationEncoder(nn.Module):
    """h_P(instance) = mean_i R_i * h(n_i), R_i the product of the (unit) relation rotations from position i on."""

    def __init__(self, num_rotations: int, dim: int):
        super().__init__()
        if dim % 2:
            raise ValueError(f"the rotation encoder reads vectors as complex numbers: hidden must be even, got {dim}")
        self.r = nn.Parameter(torch.empty(num_rotations, dim // 2, 2))
        nn.init.xavier_normal_(self.r, gain=1.414)

    def position_rotations(self, rotations: list[tuple[int, bool]]) -> list[torch.Tensor]:
        """(dim/2,) complex rotation of each position 0..l (the last, the end node, is 1)."""
        r = torch.view_as_complex(F.normalize(self.r, p=2, dim=-1).contiguous())
        out = [torch.ones_like(r[0])]
        for idx, conj in reversed(rotations):
            out.append(out[-1] * (r[idx].conj() if conj else r[idx]))
        return out[::-1]

    def forward(
        self, h: dict[str, torch.Tensor], instances: torch.Tensor, ntypes: list[str], rotations
    ) -> torch.Tensor:
        enc = None
        for i, (t, rot) in enumerate(zip(ntypes, self.position_rotations(rotations))):
            x = torch.view_as_complex(h[t].reshape(h[t].shape[0], -1, 2).contiguous()) * rot
            rows = torch.view_as_real(x).flatten(1)[instances[..., i]]
            enc = rows if enc is None else enc + rows
        return enc / len(ntypes)


class IntraMetapathAttention(nn.Module):
    """Multi-head attention over the instances ending at each target node: enc (N, K, dim) padded, mask (N, K);
    returns (N, heads * dim). Dense over the K slots (batched matrix products): a version on DGL's edge softmax
    and u_mul_e_sum spent most of its time in the sparse backward."""

    def __init__(self, dim: int, heads: int, attn_dropout: float, negative_slope: float = 0.01):
        super().__init__()
        self.attn_target = nn.Linear(dim, heads, bias=False)  # a_k's half for h_v
        self.attn_instance = nn.Linear(dim, heads, bias=False)  # a_k's half for h_P(v, u)
        for lin in (self.attn_target, self.attn_instance):
            nn.init.xavier_normal_(lin.weight, gain=1.414)
        self.attn_dropout = nn.Dropout(attn_dropout)
        self.negative_slope = negative_slope

    def forward(self, enc: torch.Tensor, mask: torch.Tensor, h_target: torch.Tensor) -> torch.Tensor:
        score = F.leaky_relu(self.attn_target(h_target).unsqueeze(1) + self.attn_instance(enc), self.negative_slope)
        score = score.masked_fill(~mask.unsqueeze(-1), float("-inf"))
        a = torch.softmax(score, dim=1).nan_to_num(0.0)  # a node without instances: all slots masked, zeros
        a = self.attn_dropout(a)  # (N, K, heads)
        return F.elu(torch.bmm(a.transpose(1, 2), enc)).flatten(1)  # (N, heads, dim) -> (N, heads * dim)


class MAGNN(nn.Module):
    def __init__(
        self,
        in_dims: dict[str, int],
        shape: StackShape,
        *,
        instances: MetapathInstances,
        heads: int,
        attn_vec_dim: int,
        dropout: float,
        encoder: str,
    ):
        """instances: the meta-path instances the model reads (their target type, meta-paths and rotations)."""
        super().__init__()
        hidden, num_classes, num_layers = shape
        if num_layers != 1:
            raise ValueError(f"MAGNN is built with one layer centred on the target type, got num_layers={num_layers}")
        if encoder != "rotate":
            raise ValueError(f"encoder={encoder!r}: only the relational rotation encoder (rotate) is built")
        self.target, self.metapath_names = instances.target, list(instances.buckets)
        self.relation_names = self.metapath_names  # recorded in results.json
        self.proj = TypeProjection(in_dims, hidden)
        self.feat_drop = nn.Dropout(dropout)
        self.encoder = RotationEncoder(instances.num_rotations, hidden)
        self.intra = nn.ModuleList(IntraMetapathAttention(hidden, heads, dropout) for _ in self.metapath_names)
        self.inter = SemanticAttention(hidden * heads, attn_vec_dim)
        self.head = nn.Linear(hidden * heads, num_classes)
        nn.init.xavier_normal_(self.head.weight, gain=1.414)
        self._beta: torch.Tensor | None = None

    @classmethod
    def from_inputs(
        cls,
        inputs: MetapathInstances,
        in_dims,
        num_classes,
        hidden,
        num_layers,
        metapaths=None,
        max_instances=None,
        sample_seed=None,
        **kwargs,
    ) -> "MAGNN":
        shape = StackShape(hidden, num_classes, num_layers)
        return cls({t: in_dims[t] for t in inputs.projected_types()}, shape, instances=inputs, **kwargs)

    def project(self, inputs, feats: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Hidden vectors of every node type on a meta-path (before feature dropout)."""
        return {t: self.proj.project(t, feats[t]) for t in self.proj.lins}

    def forward(self, inputs: MetapathInstances, feats: dict[str, torch.Tensor], embed: bool = False):
        h = {t: self.feat_drop(x) for t, x in self.project(inputs, feats).items()}
        z = []
        for name, intra in zip(self.metapath_names, self.intra):
            out = h[self.target].new_zeros(h[self.target].shape[0], self.head.in_features)
            for ids, padded, mask in inputs.buckets[name]:
                enc = self.encoder(h, padded, inputs.ntypes[name], inputs.rotations[name])
                out = out.index_copy(0, ids, intra(enc, mask, h[self.target][ids]))
            z.append(out)  # a target node without instances keeps zeros
        fused, beta = self.inter(torch.stack(z, 1))
        self._beta = beta.detach()
        return self.head(fused), (fused if embed else None)

    def relation_weights(self) -> list[dict[str, float]]:
        """{meta-path: inter-meta-path attention weight} of the last forward pass (results files)."""
        return [] if self._beta is None else [{m: float(self._beta[i]) for i, m in enumerate(self.metapath_names)}]
