"""RE-GNN's layers, one per backbone, for one's own model and the package's: called the way PyG layers are,
`conv(x, edge_index, edge_type, node_type)`, or on a graph prepared once, `conv(x, graph)`.

A heterogeneous graph made homogeneous (every node type's nodes numbered one after the other, as PyG's
`HeteroData.to_homogeneous()` does) gives what they take: `x` the node features (N, in_channels), `edge_index`
(2, E) source and destination, `edge_type` (E,) relation ids in [0, num_relations), `node_type` (N,) type ids in
[0, num_node_types). Each layer owns its relation weights and adds the typed self-loops itself. They need neither
DGL nor PyG, and run on the package's fused CPU kernels where those are built (regnn.core.backend).

A layer keeps the graph it built for the next call on inputs of the same content (compared with a copy, never
found by address: regnn.nn.graph), checks every input (ValueError naming it), and runs in its parameters' dtype:
half and bfloat16 layers compute in float32 and return their own dtype. The kept graph is no state: copies and
saved layers build their own. A graph prepared with `typed_adjacency` is shared by every layer as it is, and is
how the RE-GNN model calls these same layers (with its relation weights as `alpha`: regnn.nn.layer).

    from regnn.nn import REGCNConv, typed_adjacency
    conv1 = REGCNConv(128, 64, num_relations=6, num_node_types=4)
    h = conv1(x, edge_index, edge_type, node_type).relu()
    conv1.relation_weights()   # {relation id or "self:<type id>": learned weight}: which relation matters
    graph = typed_adjacency(edge_index, edge_type, node_type, num_relations=6)
    h = conv1(x, graph)        # the same, with the graph built once for every layer and call

The model's own input layer and dropout are here too: `TypeProjection` (a linear map per node type; sparse
features multiplied as CSR, never made dense) and `HashDropout` (nn.Dropout whose CPU mask is hashed in one pass,
several times faster than torch's there). scripts/bench/own_model.py times a model built from these pieces
beside the package's.
"""

from __future__ import annotations

from regnn.core.dropout import HashDropout
from regnn.nn.attention import REGATConv, REGATv2Conv
from regnn.nn.graph import typed_adjacency
from regnn.nn.layer import RELayer
from regnn.nn.projection import TypeProjection
from regnn.nn.propagation import REGCNConv, REGINConv, REMixHopConv, RESAGEConv

__all__ = [
    "RELayer",
    "REGCNConv",
    "RESAGEConv",
    "REGINConv",
    "REMixHopConv",
    "REGATConv",
    "REGATv2Conv",
    "typed_adjacency",
    "TypeProjection",
    "HashDropout",
]
