"""The in-memory form every loader produces: a heterograph (arrays) plus features, labels and splits."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import torch

from regnn.names import SPLITS
from regnn.data.hetero import HeteroGraph
from regnn.errors import DataError

# predict.py reads graphs whose nodes may all be unlabelled (predictions are for them): empty splits pass there only
_EMPTY_SPLITS_OK: ContextVar[bool] = ContextVar("empty_splits_ok", default=False)


@contextlib.contextmanager
def empty_splits_allowed():
    """Within the block, a graph may have empty splits (no labelled node): for predicting, never for training."""
    token = _EMPTY_SPLITS_OK.set(True)
    try:
        yield
    finally:
        _EMPTY_SPLITS_OK.reset(token)


def predicting() -> bool:
    """Whether a graph is being read for predictions (empty_splits_allowed): it may then have no labelled node."""
    return _EMPTY_SPLITS_OK.get()


@dataclass
class HeteroDataset:
    name: str
    graph: HeteroGraph  # named node types; every relation direction is its own canonical edge type
    features: dict[str, torch.Tensor]  # node type -> (num_nodes, dim) float32, dense or sparse COO
    target: str  # the labelled node type
    labels: torch.Tensor  # (num target nodes,) int64
    splits: dict[str, torch.Tensor]  # "train"/"val"/"test" -> local ids of target nodes
    num_classes: int
    # the user's own ids per node type, position i -> id (tables, PyG with ids), and class names by class id:
    # predictions and embeddings carry them where the data has them
    node_ids: dict[str, np.ndarray] | None = None
    class_names: list[str] | None = None
    unlabelled: torch.Tensor | None = None  # target nodes without a label (stored as class 0, never scored)
    # what dataset.feature_norm fitted per node type (regnn.data.scaling): a saved model applies the same
    feature_scaling: dict[str, dict] = field(default_factory=dict)
    # the names of each type's feature columns, in order (tables): a saved model binds its inputs by them
    feature_names: dict[str, list[str]] | None = None
    # the types without features of their own (one learned input vector per node), where a graph bound to a
    # trained model's record says so (regnn.data.graph_record); None: those whose features are one-hot ids
    id_only_types: frozenset | None = None
    # the encoders of each type's table columns, fitted on the training nodes (regnn.data.encoders: plain data, saved
    # with a model and applied, never refitted, to a graph it predicts on); None: features as stored
    column_encoding: dict[str, dict] | None = None
    # per node type and node, the columns (";"-joined) holding a value the encoders never saw in training, or ""
    unseen: dict[str, np.ndarray] | None = None

    def is_id_only(self, ntype: str) -> bool:
        """Whether ntype has no features of its own: its nodes are told apart by their ids alone."""
        if self.id_only_types is not None:
            return ntype in self.id_only_types
        from regnn.data.features import is_one_hot_ids

        return is_one_hot_ids(self.features[ntype])

    def __post_init__(self) -> None:
        self.validate()

    def known_labels(self) -> np.ndarray:
        """The class id of every target node, -1 where it has none."""
        labels = self.labels.numpy().copy()
        if self.unlabelled is not None:
            labels[self.unlabelled.numpy()] = -1
        return labels

    def outside_nodes(self) -> torch.Tensor:
        """The labelled target nodes in no split (never trained on nor used to choose)."""
        known = torch.from_numpy(self.known_labels() >= 0)
        for s in ("train", "val", "test"):
            known[self.splits[s]] = False
        return torch.nonzero(known).flatten()

    def split_sizes(self) -> dict[str, int]:
        """Labelled target nodes per split (train, val, test)."""
        return {s: int(len(self.splits[s])) for s in ("train", "val", "test")}

    def chance_micro_f1(self, split: str = "test") -> float:
        """The Micro-F1 (percent) of always predicting the split's largest class: what a run that learnt nothing
        scores."""
        y = self.labels[self.splits[split]]
        return 100.0 * float(torch.bincount(y).max()) / len(y) if len(y) else 0.0

    @property
    def in_dims(self) -> dict[str, int]:
        return {t: int(x.shape[1]) for t, x in self.features.items()}

    def validate(self) -> None:
        """Checks everything a model relies on; the messages name the part that is wrong."""
        g, n = self.graph, self.name
        if self.target not in g.ntypes:
            raise DataError(f"{n}: target node type {self.target!r} is not in the graph ({g.ntypes})")
        for t in g.ntypes:
            if t not in self.features:
                raise DataError(f"{n}: no features for node type {t!r}")
            rows = self.features[t].shape[0]
            if rows != g.num_nodes(t):
                raise DataError(
                    f"{n}: features of {t!r} have {rows} rows but the graph has {g.num_nodes(t)} "
                    f"{t} nodes; the feature file does not belong to this graph"
                )
        n_target = g.num_nodes(self.target)
        if self.labels.dim() != 1 or self.labels.shape[0] != n_target:
            raise DataError(
                f"{n}: {tuple(self.labels.shape)} labels for {n_target} {self.target} nodes; "
                "labels must hold one class id per target node"
            )
        no_label = self.unlabelled is not None and bool(self.unlabelled.all()) and _EMPTY_SPLITS_OK.get()
        if n_target and not no_label and (self.labels.min() < 0 or self.labels.max() >= self.num_classes):
            raise DataError(
                f"{n}: labels range over [{int(self.labels.min())}, {int(self.labels.max())}] "
                f"but there are {self.num_classes} classes; class ids must be 0..{self.num_classes - 1}"
            )
        seen: dict[str, set] = {}
        for s in SPLITS:
            if s not in self.splits:
                raise DataError(f"{n}: split {s!r} is missing (need train, val and test)")
            idx = self.splits[s]
            if idx.numel() == 0 and _EMPTY_SPLITS_OK.get():
                seen[s] = set()
                continue
            if idx.numel() == 0:
                raise DataError(f"{n}: split {s!r} is empty")
            if idx.min() < 0 or idx.max() >= n_target:
                raise DataError(
                    f"{n}: split {s!r} holds ids in [{int(idx.min())}, {int(idx.max())}] "
                    f"but there are only {n_target} {self.target} nodes (valid: 0..{n_target - 1})"
                )
            if torch.unique(idx).numel() != idx.numel():
                raise DataError(f"{n}: split {s!r} lists some nodes twice")
            seen[s] = set(idx.tolist())
        for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
            both = seen[a] & seen[b]
            if both:
                raise DataError(
                    f"{n}: splits {a!r} and {b!r} overlap in {len(both)} nodes "
                    f"(e.g. {sorted(both)[:5]}); a node may be in one split only"
                )
