"""GCN-M / GAT-M: the repo's plain GCN / GAT on ONE meta-path graph of the target type.

The model is RE-GNN's code with both relation switches off (every edge and self-loop weighs 1), so GCN-M
differs from the GCN row only in the graph: the meta-path neighbours of the target nodes instead of the
heterograph with its heterogeneity removed. `metapath: best` (the paper reports the best meta-path) is resolved
by the pipeline: one job per meta-path, the one with the best validation Micro-F1 reported, all recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from regnn.models.baselines.metapath import metapath_relation_graph
from regnn.models.regnn import REGNN, RelationInputs


@dataclass
class MetapathInputs(RelationInputs):
    metapath: str = ""

    @classmethod
    def build(cls, data, device="cpu", metapaths=None, metapath=None, **_model_options) -> "MetapathInputs":
        if not isinstance(metapaths, dict) or not metapaths:
            raise ValueError("model.metapaths must map meta-path names to relation lists (dataset.metapaths)")
        if metapath not in metapaths:
            hint = " ('best' is resolved by regnn.pipeline.train, one job per meta-path)" if metapath == "best" else ""
            raise ValueError(f"model.metapath={metapath!r} is not valid: use one of {list(metapaths)} or best{hint}")
        rg = metapath_relation_graph(data, metapath, metapaths[metapath]).to(device)
        return cls(rg.adjacency(), rg.ntypes, rg.nodes_of(data.target).to(device), rg, metapath)


def build_metapath_gnn(
    inputs: MetapathInputs,
    in_dims: dict[str, int],
    num_classes: int,
    metapaths=None,
    metapath=None,
    metapath_select_runs=None,
    **kwargs,
) -> REGNN:
    """The GCN/GAT of the model config on the meta-path graph; only the target type's features are used."""
    if kwargs.get("edge_embeddings") or kwargs.get("self_loop_embeddings"):
        raise ValueError(
            "GCN-M/GAT-M are plain GNNs on a meta-path graph: set model.relation.edge_embeddings "
            "and model.relation.self_loop_embeddings to false"
        )
    target = inputs.ntypes[0]
    return REGNN.from_inputs(inputs, {target: in_dims[target]}, num_classes, **kwargs)
