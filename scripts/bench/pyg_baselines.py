"""regnn's R-GCN, HGT and Simple-HGN written with PyG (scripts/bench/pyg_side_by_side.py trains them beside regnn's).

Each is built from a built regnn model and starts from its weights where the two parameterisations correspond:

- PygRGCN: PyG's `RGCNConv(aggr="mean")` (a weight per relation, a root weight, a bias) is regnn's RelGraphConv;
  the copy computes the same class scores (a basis decomposition is copied as the relation weights it gives).
- PygSimpleHGN: Simple-HGN's layer on PyG's MessagePassing and `utils.softmax` (edge-type embeddings in the
  attention logit, residual attention, node residuals, L2-normalised output), with regnn's parameter names; the
  copy computes the same class scores, and its edges are in regnn's order, so a seed draws the same dropout masks.
- PygHGT: PyG's `HGTConv`. Its key/query/value, relation attention/message matrices, priors, output map and skip
  gates are regnn's (DGL's HGTConv) and are copied; what cannot correspond stays PyG's: GELU on the aggregated
  messages before the output map (the HGT paper's place; DGL's layer has none, so regnn applies GELU after each
  layer), biases in the type-wise maps (started at 0), no dropout inside the layer (here: after each layer, where
  DGL's drops the output map's result before the skip). So it is another function from the same start.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import HGTConv, MessagePassing, RGCNConv
from torch_geometric.utils import softmax


class PygRGCN(nn.Module):
    """regnn's R-GCN (regnn.models.baselines.rgcn.RGCN) with PyG's RGCNConv layers, from a built RGCN's weights."""

    def __init__(self, ours, inputs=None):
        super().__init__()
        self.proj, self.dropout = copy.deepcopy(ours.proj), copy.deepcopy(ours.dropout)
        self.convs = nn.ModuleList()
        for conv in ours.convs:
            w = conv.linear_r.weight().detach()  # (relations, in, out)
            pyg = RGCNConv(w.shape[1], w.shape[2], w.shape[0], aggr="mean", root_weight=True, bias=True)
            with torch.no_grad():
                pyg.weight.copy_(w)
                pyg.root.copy_(conv.loop_weight)
                pyg.bias.copy_(conv.h_bias)
            self.convs.append(pyg)

    def forward(self, inputs, feats, embed: bool = False):
        h = self.proj(feats, inputs.ntypes)
        edge_index, edge_type = torch.stack([inputs.src, inputs.dst]), inputs.etype
        last = len(self.convs) - 1
        for i, conv in enumerate(self.convs):
            h = conv(self.dropout(h), edge_index, edge_type)
            if i < last:
                h = F.relu(h)
        out = h[inputs.target_nodes]
        return out, (out if embed else None)


def hetero_edges(tg) -> tuple[tuple[list[str], list[tuple[str, str, str]]], dict]:
    """PyG's (metadata, edge_index_dict) of a TypedGraph, relations in regnn's order, local node ids."""
    types = [(tg.ntypes[s], name, tg.ntypes[d]) for name, (s, d) in zip(tg.relation_names, tg.relation_types)]
    edges = {}
    for r, (s, d) in enumerate(tg.relation_types):
        mask = tg.etype == r
        edges[types[r]] = torch.stack([tg.src[mask] - tg.node_offsets[s], tg.dst[mask] - tg.node_offsets[d]])
    return (list(tg.ntypes), types), edges


def copy_hgt_conv(pyg, ours, ntypes: list[str], etypes: list[tuple[str, str, str]]) -> None:
    """Copies regnn's HGTConv weights into PyG's HGTConv where they correspond; PyG's biases start at 0. PyG holds
    relation r's head-h matrix as k_rel/v_rel type h * R + r, and regnn's per head (relation_att[h].W[r])."""
    heads, num_rel = ours.num_heads, len(etypes)
    wk, wq, wv, wa = (m.weight().detach() for m in (ours.linear_k, ours.linear_q, ours.linear_v, ours.linear_a))
    with torch.no_grad():
        for i, t in enumerate(ntypes):
            kqv, out = pyg.kqv_lin.lins[t], pyg.out_lin.lins[t]
            kqv.weight.copy_(torch.cat([wk[i], wq[i], wv[i]], 1).t())
            out.weight.copy_(wa[i].t())
            kqv.bias.zero_()
            out.bias.zero_()
            pyg.skip[t].fill_(float(ours.skip[i]))
        for h in range(heads):
            att, msg = ours.relation_att[h].weight().detach(), ours.relation_msg[h].weight().detach()
            pyg.k_rel.weight[h * num_rel : (h + 1) * num_rel].copy_(att)
            pyg.v_rel.weight[h * num_rel : (h + 1) * num_rel].copy_(msg)
            for r, et in enumerate(etypes):
                pyg.p_rel["__".join(et)][0, h] = ours.relation_pri[h][r]


class PygHGT(nn.Module):
    """regnn's HGT frame (type-wise input projection, GELU, dropout; a linear layer on the target nodes) around
    PyG's HGTConv layers, each followed by the cell's layer norm (where use_norm) and dropout."""

    def __init__(self, ours, inputs):
        super().__init__()
        if ours.variant != "dgl":
            raise ValueError("PyG's HGTConv is DGL's form (one softmax over all in-edges): compare variant=dgl")
        self.proj, self.dropout, self.head = (copy.deepcopy(m) for m in (ours.proj, ours.dropout, ours.head))
        self.metadata, self.edges = hetero_edges(inputs)  # the graph of every call (full-batch training)
        self.convs, self.norms = nn.ModuleList(), nn.ModuleList()
        for conv in ours.convs:
            hidden = conv.num_heads * conv.head_size
            pyg = HGTConv(conv.in_size, hidden, self.metadata, heads=conv.num_heads)
            copy_hgt_conv(pyg, conv, *self.metadata)
            self.convs.append(pyg)
            self.norms.append(copy.deepcopy(conv.norm) if conv.use_norm else nn.Identity())

    def forward(self, inputs, feats, embed: bool = False):
        h = self.dropout(F.gelu(self.proj(feats, inputs.ntypes)))
        blocks = inputs.node_blocks()
        for conv, norm in zip(self.convs, self.norms):
            x = {inputs.ntypes[t]: h[a:b] for t, a, b in blocks}
            out = conv(x, self.edges)
            # a type that no relation reaches gets no output from PyG: it keeps its input
            h = torch.cat([out.get(t) if out.get(t) is not None else x[t] for t in inputs.ntypes])
            h = self.dropout(norm(h))
        h = h[inputs.target_nodes]
        return self.head(h), (h if embed else None)


class PygSimpleHGNConv(MessagePassing):
    """One Simple-HGN layer (regnn's EdgeTypeGATConv) on PyG's MessagePassing, with its parameters and names."""

    def __init__(self, ours):
        super().__init__(aggr="add", node_dim=0)
        for name in ("heads", "out_dim", "beta", "negative_slope"):
            setattr(self, name, getattr(ours, name))
        for name in ("fc", "edge_emb", "fc_e", "attn_dropout", "res_fc"):
            setattr(self, name, copy.deepcopy(getattr(ours, name)))
        for name in ("attn_l", "attn_r", "attn_e"):
            setattr(self, name, nn.Parameter(getattr(ours, name).detach().clone()))

    def forward(self, x, edge_index, edge_type, prev_attn=None):
        z = self.fc(x).view(-1, self.heads, self.out_dim)
        src, dst = edge_index
        el, er = (z * self.attn_l).sum(-1), (z * self.attn_r).sum(-1)
        e = self.fc_e(self.edge_emb.weight).view(-1, self.heads, self.attn_e.shape[-1])
        score = el[src] + er[dst] + (e * self.attn_e).sum(-1)[edge_type]
        a = self.attn_dropout(softmax(F.leaky_relu(score, self.negative_slope), dst, num_nodes=x.shape[0]))
        if prev_attn is not None and self.beta > 0:
            a = a * (1 - self.beta) + prev_attn * self.beta
        out = self.propagate(edge_index, z=z, a=a)
        if self.res_fc is not None:
            out = out + self.res_fc(x).view(-1, self.heads, self.out_dim)
        return out, a.detach()

    def message(self, z_j, a):
        return z_j * a.unsqueeze(-1)


class PygSimpleHGN(nn.Module):
    """regnn's Simple-HGN (regnn.models.baselines.simple_hgn.SimpleHGN) with PygSimpleHGNConv layers, from its
    weights; the edges in regnn's (CSR) order, so that attention dropout draws the same masks."""

    def __init__(self, ours, inputs=None):
        super().__init__()
        self.proj, self.dropout = copy.deepcopy(ours.proj), copy.deepcopy(ours.dropout)
        self.convs = nn.ModuleList(PygSimpleHGNConv(c) for c in ours.convs)
        self.out = PygSimpleHGNConv(ours.out)

    def forward(self, inputs, feats, embed: bool = False):
        adj = inputs.adj
        edge_index, edge_type = torch.stack([adj.indices, adj.dst_of]), adj.rel
        h = self.proj(feats, inputs.ntypes)
        attn = None
        for conv in self.convs:
            h, attn = conv(self.dropout(h), edge_index, edge_type, attn)
            h = F.elu(h.flatten(1))
        logits, _ = self.out(self.dropout(h), edge_index, edge_type)
        logits = logits.mean(1)[inputs.target_nodes]
        out = logits / logits.norm(dim=1, keepdim=True).clamp(min=1e-12)
        return out, (out if embed else None)
