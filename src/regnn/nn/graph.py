"""The graph a regnn.nn layer propagates over: its inputs checked, and the graph built from them kept between
calls only for inputs of the same content.

A layer is usually called on one graph many times (an epoch after another), and building the graph (sorting the
edges, CSR and CSC views) costs far more than comparing the inputs with a private copy of those it was built
from. Nothing cheaper tells two graphs apart: a tensor's address, shape and version counter are shared by views
of one storage and by a fresh tensor in a freed one, and an edit through `.data` or `.numpy()` leaves the
version as it was.
"""

from __future__ import annotations

import torch

from regnn.core.adjacency import Adjacency
from regnn.core.backend import Backend


def typed_adjacency(
    edge_index: torch.Tensor,
    edge_type: torch.Tensor,
    node_type: torch.Tensor,
    num_relations: int,
    backend: Backend | None = None,
) -> Adjacency:
    """The graph a layer propagates over: the edges without their self-edges, plus one self-loop per node whose
    relation is num_relations + its node type (RE-GNN's typed self-loops), ordered by destination. backend: how
    the layers compute on it (regnn.core.backend; None: the fused kernels on the CPU where they are built)."""
    src, dst = edge_index[0].long(), edge_index[1].long()
    keep = src != dst
    n = node_type.numel()
    ids = torch.arange(n, device=src.device)
    src, dst = torch.cat([src[keep], ids]), torch.cat([dst[keep], ids])
    rel = torch.cat([edge_type.long()[keep], num_relations + node_type.long()])
    order = torch.argsort(dst * n + src)
    adj = Adjacency.from_edges(src[order], dst[order], rel[order], n, backend=backend)
    adj.num_relations = int(num_relations)  # a layer of another relation count would read its self-loops wrong
    return adj


def _integral(t) -> bool:
    return isinstance(t, torch.Tensor) and not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)


def check_inputs(x, in_channels: int | None, dtype: torch.dtype | None) -> None:
    """What every call checks of x (its shape and dtype, nothing read from it): (N, in_channels) of the layer's
    dtype; in_channels None: any width."""
    width = "in_channels" if in_channels is None else f"in_channels={in_channels}"
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or (in_channels is not None and x.shape[1] != in_channels):
        raise ValueError(f"x must be (N, {width}), got {_shape(x)}")
    if not x.is_floating_point():
        raise ValueError(f"x must be floating point, got {x.dtype}")
    if dtype is not None and x.dtype != dtype and not torch.is_autocast_enabled(x.device.type):
        raise ValueError(f"x has dtype {x.dtype} but the layer's parameters are {dtype}: convert one to the other")


def check_nodes(node_type, num_nodes: int) -> None:
    """node_type (N,) integral ids, N = x's rows."""
    if not _integral(node_type) or node_type.dim() != 1 or node_type.shape[0] != num_nodes:
        raise ValueError(
            f"node_type must be integral ids (N,) with N = x's {num_nodes} rows, got {_shape(node_type)} "
            f"{getattr(node_type, 'dtype', '')}"
        )


def check_graph(edge_index, edge_type, node_type, num_relations: int, num_node_types: int) -> None:
    """The edges and ids: edge_index (2, E) node ids in [0, N), edge_type (E,) in [0, num_relations), node_type
    in [0, num_node_types), all on node_type's device."""
    if not _integral(edge_index) or edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must be integral (2, E), got {_shape(edge_index)} {edge_index.dtype}")
    if not _integral(edge_type) or edge_type.shape != edge_index.shape[1:]:
        raise ValueError(
            f"edge_type must be integral (E,) with E = {edge_index.shape[1]} edges, got {_shape(edge_type)}"
        )
    if edge_index.device != node_type.device or edge_type.device != node_type.device:
        raise ValueError(
            f"edge_index ({edge_index.device}), edge_type ({edge_type.device}) and node_type ({node_type.device}) "
            "must be on x's device"
        )
    _check_range("edge_index", edge_index, node_type.numel(), "node ids")
    _check_range("edge_type", edge_type, num_relations, "relation ids")
    _check_range("node_type", node_type, num_node_types, "node type ids")


def _check_range(name: str, t: torch.Tensor, n: int, what: str) -> None:
    if t.numel():
        low, high = (int(v) for v in torch.aminmax(t))
        if low < 0 or high >= n:
            raise ValueError(f"{name} must lie in [0, {n}) ({what}), got [{low}, {high}]")


def _shape(t) -> str:
    return str(tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.device == b.device and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


class GraphCache:
    """The last graph a layer built, with a private copy of the inputs it was built from: found again only for
    inputs equal to that copy (same device, dtype, shape and values). Copies of a layer (deepcopy, pickling)
    start empty: the graph is the call's, not the layer's, and its compiled backend does not pickle."""

    def __init__(self):
        self._inputs: tuple[torch.Tensor, ...] | None = None
        self._adj: Adjacency | None = None

    def get(self, edge_index, edge_type, node_type, build) -> Adjacency:
        """The graph of these inputs: the kept one if they equal those it was built from, else build() (which
        checks them) kept in its place."""
        new = (edge_index, edge_type, node_type)
        if self._inputs is not None and all(_same(a, b) for a, b in zip(new, self._inputs)):
            return self._adj
        self.clear()
        # built outside inference mode even under it: inference tensors could not be kept for later calls that
        # record autograd (they cannot be saved for backward)
        with torch.inference_mode(False), torch.no_grad():
            adj = build()
            self._inputs, self._adj = tuple(t.detach().clone() for t in new), adj
        return adj

    def clear(self) -> None:
        self._inputs, self._adj = None, None

    def __getstate__(self):
        return {}

    def __setstate__(self, state):
        self.__init__()
