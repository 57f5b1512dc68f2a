"""R-HGNN (Yu et al., "Heterogeneous Graph Representation Learning with Relation Awareness", TKDE 2022).

Every node holds one representation per relation that ends at its type (h_{v,r}), and every relation a learnt
embedding r. One layer, for each relation r = (s -> t):
1. relation-specific convolution: node-level attention over the r-neighbours u of v,
   e_uv = LeakyReLU(a_r,dst . W_t h_{v,r} + a_r,src . W_s h_{u,r'}), where r' is the reverse relation (t -> s: the
   representation of u that ends at its own type), W_s / W_t the node types' maps (dropout on their inputs) and
   the attention vectors a_r computed from the relation embedding; z_{v,r} = ReLU(sum_u softmax_u(e_uv) W_s h_{u,r'});
2. a gated residual, z_{v,r} <- sigmoid(g_t) z_{v,r} + (1 - sigmoid(g_t)) W_res,t h_{v,r};
3. cross-relation message passing: h'_{v,r} = sum_{r''} softmax_{r''}(LeakyReLU(w_r . z_{v,r''})) z_{v,r''} over
   the relations r'' into the same type, so each relation-aware representation draws on the others (then
   dropout and a layer norm per node type);
4. the relation embeddings move to the next layer's space, r <- W^rel_r r + b.
After the layers the target node's relation-aware representations are fused by relation-aware semantic
attention, beta_{v,r} = softmax_r(LeakyReLU((M_r h_{v,r}) . (N_r r))), h_v = sum_r beta_{v,r} M_r h_{v,r}, and a linear
classifier follows. Every map and attention vector is per head (heads x hidden). The inputs pass the per-type
projection every baseline here starts from. The layout follows the paper and its authors' released code.

Each relation's graph is an Adjacency (regnn.core) of its bipartite edges, source type -> destination type: the
attention logits, their softmax over a node's in-edges and the weighted sum run on its arrays (float64 fixtures
pin them to DGL's u_add_v, edge_softmax and u_mul_e_sum, tests/test_dgl_ports_magnn.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.core.attention_ops import aggregate_heads
from regnn.models.stack import StackShape
from regnn.nn.projection import TypeProjection


@dataclass
class RelationGraphs:
    graphs: dict[str, Adjacency]  # relation name -> its bipartite graph (source type -> destination type)
    ends: dict[str, tuple[str, str]]  # relation name -> (source type, destination type)
    source_key: dict[str, str | None]  # relation -> the relation whose representation its sources send (reverse)
    ntypes: list[str]
    target: str

    @classmethod
    def build(cls, data, device="cpu", **_model_options) -> "RelationGraphs":
        g = data.graph
        graphs, ends = {}, {}
        for s, r, t in g.canonical_etypes:
            u, v = g.edges(etype=(s, r, t))
            graphs[r] = Adjacency.from_edges(u, v, None, g.num_nodes(s), g.num_nodes(t)).to(device)
            ends[r] = (s, t)
        # the reverse relation t -> s ends at the source type: its representation is what a source node sends
        # along r; without one, the source type's mean over its relations (or its projected features) is sent
        # ("a->b" reverses "b->a"; other names: the first relation t -> s, as the authors' code pairs them)
        source_key = {}
        for r, (s, t) in ends.items():
            named = "->".join(reversed(r.split("->")))
            source_key[r] = (
                named
                if ends.get(named) == (t, s)
                else next((q for q, ab in ends.items() if ab == (t, s) and q != r), r if s == t else None)
            )
        return cls(graphs, ends, source_key, list(g.ntypes), data.target)

    def into(self, ntype: str) -> list[str]:
        return [r for r, (_, t) in self.ends.items() if t == ntype]


def _per_head(n: int, heads: int, d_in: int, d_out: int) -> nn.Parameter:
    """n maps (heads, d_in, d_out), each Xavier-initialised as one 3-d tensor, as R_HGNN initialises its per-relation
    fusion weights (fan in d_in * d_out, fan out heads * d_out)."""
    w = torch.empty(n, heads, d_in, d_out)
    for i in range(n):
        nn.init.xavier_normal_(w[i], GAIN)
    return nn.Parameter(w)


class RHGNNLayer(nn.Module):
    def __init__(
        self,
        inputs: RelationGraphs,
        in_dim: int,
        hidden: int,
        heads: int,
        rel_in: int,
        rel_out: int,
        dropout: float,
        residual: bool,
        norm: bool,
        negative_slope: float = 0.2,
    ):
        super().__init__()
        rels, types = list(inputs.ends), inputs.ntypes
        self.H, self.d, self.residual, self.slope = heads, hidden, residual, negative_slope
        out = heads * hidden
        self.w = nn.ModuleDict({t: _xavier(nn.Linear(in_dim, out, bias=False)) for t in types})
        self.att = nn.ModuleDict({r: _xavier(nn.Linear(rel_in, heads * 2 * hidden, bias=False)) for r in rels})
        self.cross = nn.ParameterDict(
            {r: nn.Parameter(nn.init.xavier_normal_(torch.empty(heads, hidden), GAIN)) for r in rels}
        )
        self.rel_map = nn.ModuleDict({r: _xavier(nn.Linear(rel_in, rel_out)) for r in rels})
        if residual:
            self.res = nn.ModuleDict({t: _xavier(nn.Linear(in_dim, out)) for t in types})
            self.gate = nn.ParameterDict({t: nn.Parameter(torch.randn(1)) for t in types})
        self.norm = nn.ModuleDict({t: nn.LayerNorm(out) for t in types}) if norm else None
        self.drop = nn.Dropout(dropout)

    def forward(
        self,
        inputs: RelationGraphs,
        h: dict[str, torch.Tensor],
        base: dict[str, torch.Tensor],
        rel: dict[str, torch.Tensor],
    ):
        """h: relation -> (destination nodes, in_dim); base: node type -> its representation where no relation
        ends at it; rel: relation -> embedding. Returns the next h and rel."""
        H, d = self.H, self.d
        z = {}
        for r, g in inputs.graphs.items():
            s, t = inputs.ends[r]
            ws = self.w[s](self.drop(_source(inputs, r, h, base))).view(-1, H, d)
            wd = self.w[t](self.drop(h[r])).view(-1, H, d)
            a = self.att[r](rel[r]).view(H, 2, d)
            el, er = (ws * a[:, 1]).sum(-1), (wd * a[:, 0]).sum(-1)  # (N_s, H), (N_t, H)
            z[r] = F.relu(relation_attention(g, ws, el, er, self.slope)).flatten(1)  # (N_t, H * d)
            if self.residual:
                g_t = torch.sigmoid(self.gate[t])
                z[r] = g_t * z[r] + (1 - g_t) * self.res[t](h[r])
        out = {}
        for t in inputs.ntypes:
            rs = inputs.into(t)
            if len(rs) == 1:
                out[rs[0]] = z[rs[0]]
            elif rs:
                zs = torch.stack([z[q] for q in rs], 1).view(-1, len(rs), H, d)  # (N, R_t, H, d)
                for r in rs:
                    beta = torch.softmax(F.leaky_relu((zs * self.cross[r]).sum(-1, keepdim=True), self.slope), 1)
                    out[r] = self.drop((beta * zs).sum(1)).flatten(1)
            if self.norm is not None:
                for r in rs:
                    out[r] = self.norm[t](out[r])
        return out, {r: self.rel_map[r](e) for r, e in rel.items()}


GAIN = nn.init.calculate_gain("relu")


def relation_attention(
    g: Adjacency, ws: torch.Tensor, el: torch.Tensor, er: torch.Tensor, negative_slope: float
) -> torch.Tensor:
    """sum over the in-edges u -> v of softmax_u(LeakyReLU(el[u] + er[v])) ws[u], per head: ws (N_s, H, d),
    el (N_s, H), er (N_t, H) -> (N_t, H, d); a node without in-edges gets zeros."""
    alpha = g.edge_softmax(F.leaky_relu(g.u_add_v(el, er), negative_slope))  # (E, H), CSR order
    return aggregate_heads(g, ws, alpha)


def _xavier(lin: nn.Linear) -> nn.Linear:
    nn.init.xavier_normal_(lin.weight, GAIN)
    return lin


def _source(inputs: RelationGraphs, r: str, h, base) -> torch.Tensor:
    key = inputs.source_key[r]
    if key is not None:
        return h[key]
    s = inputs.ends[r][0]
    rs = inputs.into(s)
    return torch.stack([h[q] for q in rs]).mean(0) if rs else base[s]


class RelationFusion(nn.Module):
    """beta_{v,r} = softmax_r(LeakyReLU((M_r h_{v,r}) . (N_r r))) per head; h_v = sum_r beta_{v,r} M_r h_{v,r}.
    A type with one relation into it (DBLP's authors) keeps that representation as it is, as R-HGNN's
    RelationFusing does: no map, no dropout."""

    def __init__(
        self, rels: list[str], hidden: int, heads: int, rel_dim: int, dropout: float, negative_slope: float = 0.2
    ):
        super().__init__()
        self.rels, self.H, self.d, self.slope = rels, heads, hidden, negative_slope
        if len(rels) > 1:
            self.feat = _per_head(len(rels), heads, hidden, hidden)
            self.key = _per_head(len(rels), heads, rel_dim, hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, h: dict[str, torch.Tensor], rel: dict[str, torch.Tensor]):
        H, d = self.H, self.d
        if len(self.rels) == 1:
            z = h[self.rels[0]]
            return z, z.new_ones(1)
        feats = torch.stack(
            [torch.einsum("nhi,hio->nho", h[r].view(-1, H, d), self.feat[i]) for i, r in enumerate(self.rels)], 1
        )  # (N, R, H, d)
        keys = torch.stack(
            [torch.einsum("hi,hio->ho", rel[r].view(H, -1), self.key[i]) for i, r in enumerate(self.rels)]
        )  # (R, H, d)
        beta = torch.softmax(F.leaky_relu((feats * keys).sum(-1), self.slope), 1)  # (N, R, H)
        return self.drop((beta.unsqueeze(-1) * feats).sum(1)).flatten(1), beta.mean((0, 2))


class RHGNN(nn.Module):
    def __init__(
        self,
        inputs: RelationGraphs,
        in_dims: dict[str, int],
        shape: StackShape,
        *,
        heads: int,
        relation_dim: int,
        dropout: float,
        residual: bool,
        norm: bool,
    ):
        """hidden: units per head."""
        super().__init__()
        hidden, num_classes, num_layers = shape
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        self.target = inputs.target
        self.relation_names = inputs.into(inputs.target)  # fused for the target type; weights in results files
        width, rel_width = heads * hidden, heads * relation_dim
        self.proj = TypeProjection(in_dims, width)
        # one embedding per relation (width relation_dim), in every layer mapped to heads x relation_dim
        self.rel_emb = nn.ParameterDict(
            {r: nn.Parameter(nn.init.xavier_normal_(torch.empty(relation_dim, 1), GAIN).flatten()) for r in inputs.ends}
        )
        self.layers = nn.ModuleList(
            RHGNNLayer(
                inputs, width, hidden, heads, relation_dim if i == 0 else rel_width, rel_width, dropout, residual, norm
            )
            for i in range(num_layers)
        )
        self.fusion = RelationFusion(self.relation_names, hidden, heads, relation_dim, dropout)
        self.head = nn.Linear(width, num_classes)
        self._beta: torch.Tensor | None = None

    @classmethod
    def from_inputs(cls, inputs: RelationGraphs, in_dims, num_classes, hidden, num_layers, **kwargs) -> "RHGNN":
        return cls(inputs, in_dims, StackShape(hidden, num_classes, num_layers), **kwargs)

    def forward(self, inputs: RelationGraphs, feats: dict[str, torch.Tensor], embed: bool = False):
        base = {t: self.proj.project(t, feats[t]) for t in inputs.ntypes}
        h = {r: base[t] for r, (_, t) in inputs.ends.items()}  # every relation starts from its type's features
        rel = dict(self.rel_emb.items())
        for layer in self.layers:
            h, rel = layer(inputs, h, base, rel)
        z, beta = self.fusion(h, rel)
        self._beta = beta.detach()
        return self.head(z), (z if embed else None)

    def relation_weights(self) -> list[dict[str, float]]:
        """{relation into the target type: mean fusion weight} of the last forward pass (results files)."""
        if self._beta is None:
            return []
        return [{r: float(b) for r, b in zip(self.relation_names, self._beta)}]
