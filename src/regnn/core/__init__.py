from regnn.core.adjacency import Adjacency
from regnn.core.backend import Backend, choose_backend
from regnn.core.relation import Relation, RelationWeights
from regnn.core.attention import REGATConv, REGATv2Conv
from regnn.core.conv import REGINConv, REGraphConv, REMixHopConv, RESAGEConv

__all__ = [
    "Adjacency",
    "Backend",
    "choose_backend",
    "Relation",
    "RelationWeights",
    "REGraphConv",
    "RESAGEConv",
    "REGINConv",
    "REMixHopConv",
    "REGATConv",
    "REGATv2Conv",
]
