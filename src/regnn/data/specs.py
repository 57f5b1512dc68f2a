"""Schemas of the MAGNN-style processed datasets: node types, feature files and named relations.

A schema is plain data, so a user's own dataset in the same on-disk format only needs a schema of its own
(`MagnnSpec.from_dict`, e.g. from a dataset YAML) and no new code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from regnn.errors import DataError


@dataclass(frozen=True)
class AdjacencyBlock:
    """Edges from `src` to `dst`, read from the (src, dst) and (dst, src) blocks of adjM.

    Each direction becomes its own relation type: `name` for src->dst and `reverse` for dst->src.
    """

    src: str
    dst: str
    name: str
    reverse: str


@dataclass(frozen=True)
class MagnnSpec:
    name: str  # directory name under the data root, e.g. "DBLP"
    node_types: tuple[str, ...]  # node_types.npy holds the index of the type in this tuple
    target: str  # the labelled node type
    features: dict[str, str | None]  # node type -> feature file in the dataset dir, None: one-hot ids
    relations: tuple[AdjacencyBlock, ...]
    default_feats_type: str = "raw"
    num_classes: int | None = None  # known class count (labels are checked against it); None: inferred
    files: tuple[str, ...] = field(default=("adjM.npz", "node_types.npy", "labels.npy", "train_val_test_idx.npz"))

    @classmethod
    def from_dict(cls, d: dict) -> "MagnnSpec":
        """Build a schema from plain data (a YAML block); names what is missing."""
        missing = [k for k in ("name", "node_types", "target", "relations") if k not in d]
        if missing:
            raise DataError(
                f"dataset schema lacks {missing}; give name, node_types, target, relations "
                "(and optionally features) -- see docs/custom_data.md"
            )
        node_types = tuple(d["node_types"])
        rels = []
        for r in d["relations"]:
            r = list(r)
            if len(r) == 2:  # [src, dst]: default names
                r += [f"{r[0]}->{r[1]}", f"{r[1]}->{r[0]}" if r[0] != r[1] else f"{r[1]}<-{r[0]}"]
            if len(r) != 4:
                raise DataError(f"relation {r} must be [src, dst] or [src, dst, name, reverse_name]")
            rels.append(AdjacencyBlock(*map(str, r)))
        features = dict(d.get("features") or {})
        spec = cls(
            name=str(d["name"]),
            node_types=node_types,
            target=str(d["target"]),
            features={t: features.get(t) for t in node_types},
            relations=tuple(rels),
            default_feats_type=str(d.get("default_feats_type", "raw")),
            num_classes=d.get("num_classes"),
        )
        spec.check()
        return spec

    def check(self) -> None:
        if len(set(self.node_types)) != len(self.node_types):
            raise DataError(f"{self.name}: node types repeat: {self.node_types}")
        if self.target not in self.node_types:
            raise DataError(f"{self.name}: target type {self.target!r} is not among {self.node_types}")
        names = [n for r in self.relations for n in (r.name, r.reverse)]
        if len(set(names)) != len(names):
            raise DataError(f"{self.name}: relation names repeat: {names}")
        for r in self.relations:
            for t in (r.src, r.dst):
                if t not in self.node_types:
                    raise DataError(f"{self.name}: relation {r.name} uses unknown node type {t!r}")


def _rel(src: str, dst: str) -> AdjacencyBlock:
    return AdjacencyBlock(src, dst, f"{src}->{dst}", f"{dst}->{src}")


# Authors' feats_type per dataset (REFERENCE.md): DBLP all raw, ACM target raw + one-hot ids, IMDB target only.
BUILTIN: dict[str, MagnnSpec] = {
    "dblp": MagnnSpec(
        name="DBLP",
        node_types=("author", "paper", "term", "venue"),
        target="author",
        features={"author": "features_0.npz", "paper": "features_1.npz", "term": "features_2.npy", "venue": None},
        relations=(_rel("author", "paper"), _rel("paper", "term"), _rel("paper", "venue")),
        default_feats_type="raw",
        num_classes=4,
    ),
    "acm": MagnnSpec(
        name="ACM",
        node_types=("paper", "author", "subject"),
        target="paper",
        features={"paper": "features_0.npz", "author": "features_1.npz", "subject": "features_2.npz"},
        # adjM stores each citation once (citing -> cited); the reverse direction is its own relation.
        relations=(
            AdjacencyBlock("paper", "paper", "paper-cites->paper", "paper-cited_by->paper"),
            _rel("paper", "author"),
            _rel("paper", "subject"),
        ),
        default_feats_type="target_onehot",
        num_classes=3,
    ),
    "imdb": MagnnSpec(
        name="IMDB",
        node_types=("movie", "director", "actor"),
        target="movie",
        features={"movie": "features_0.npz", "director": "features_1.npz", "actor": "features_2.npz"},
        relations=(_rel("movie", "director"), _rel("movie", "actor")),
        default_feats_type="target_zeros",
        num_classes=3,
    ),
}


def builtin_spec(name: str) -> MagnnSpec:
    key = name.lower()
    if key not in BUILTIN:
        raise DataError(
            f"unknown dataset {name!r}; built-in datasets: {sorted(BUILTIN)} "
            "(or use dataset=custom dataset.path=... for your own)"
        )
    return BUILTIN[key]
