from regnn.core.relation import RelationWeights
from regnn.core.attention import REGATConv, REGATv2Conv
from regnn.core.conv import REGINConv, REGraphConv, REMixHopConv, RESAGEConv

__all__ = ["RelationWeights", "REGraphConv", "RESAGEConv", "REGINConv", "REMixHopConv", "REGATConv", "REGATv2Conv"]
