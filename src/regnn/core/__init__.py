from regnn.core.relation import RelationWeights
from regnn.core.conv import REGraphConv, REGATConv

__all__ = ["RelationWeights", "REGraphConv", "REGATConv"]
