from regnn.core.adjacency import Adjacency
from regnn.core.backend import Backend, choose_backend
from regnn.core.relation import Relation, RelationWeights

__all__ = ["Adjacency", "Backend", "choose_backend", "Relation", "RelationWeights"]
