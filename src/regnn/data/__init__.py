"""Datasets as heterographs on arrays, and the relation-typed homogeneous graph RE-GNN runs on."""

from __future__ import annotations

from pathlib import Path

from regnn.data.dataset import HeteroDataset
from regnn.data.magnn import load_magnn
from regnn.data.pyg import from_heterodata, to_heterodata
from regnn.data.relation_graph import RelationGraph, build_relation_graph
from regnn.data.specs import BUILTIN, MagnnSpec, builtin_spec
from regnn.data.synthetic import CountGraph, make_count_graph, make_synthetic
from regnn.errors import DataError
from regnn.names import COMMON_DATASET_KEYS as COMMON_KEYS

__all__ = [
    "HeteroDataset",
    "RelationGraph",
    "build_relation_graph",
    "load_magnn",
    "MagnnSpec",
    "BUILTIN",
    "builtin_spec",
    "make_synthetic",
    "make_count_graph",
    "load_dataset",
    "dataset_keys",
    "from_heterodata",
    "to_heterodata",
]


def dataset_keys(format: str) -> set[str]:
    """The keys a dataset config of this format may hold: the common ones and its loader's keyword arguments
    (regnn.names.DATASET_KEYS, which the config check reads without importing the loaders, must equal these)."""
    import inspect

    if format == "synthetic":
        loader = make_synthetic
    elif format == "synthetic_counts":
        loader = CountGraph
    elif format == "planted":
        from regnn.data.planted import make_planted as loader
    elif format == "ogb":
        from regnn.data.ogb import load_ogb as loader
    elif format == "custom":
        from regnn.data.custom import load_custom as loader
    else:
        return set(COMMON_KEYS) | {"schema"}
    extra = {"ogb_name"} if format == "ogb" else set()
    params = inspect.signature(loader).parameters
    return set(COMMON_KEYS) | extra | {k for k in params if k not in ("root", "display_name")}


def load_dataset(
    name: str,
    dir: str | Path | None = None,
    format: str = "magnn",
    feats_type: str | None = None,
    verify: bool = False,
    sums: str | Path | None = None,
    feature_norm="none",
    drop_relations=(),
    **options,
) -> HeteroDataset:
    """One entry point for every dataset the configs can name.

    verify=True checks the files against the pinned SHA-256 sums (data/SHA256SUMS) before reading them.
    drop_relations: relation names taken out of the graph with their reverses (regnn.data.pruning).
    feature_norm: none | row | standard, or {node type: method} (regnn.data.scaling); a feature matrix still far
    outside the usual scale afterwards gets a warning naming the option. feature_norm=None: the features as
    stored, unchecked (a caller that scales them itself, as predict applies a run's fitted statistics).
    """
    from regnn.data.pruning import drop_relations as without
    from regnn.data.scaling import apply_feature_norm

    data = without(_load(name, dir, format, feats_type, verify, sums, **options), list(drop_relations or ()))
    return data if feature_norm is None else apply_feature_norm(data, feature_norm)


def _load(name, dir, format, feats_type, verify, sums, **options) -> HeteroDataset:
    if format == "synthetic":
        return make_synthetic(**options)
    if format == "synthetic_counts":
        return make_count_graph(**options)
    if format == "planted":
        from regnn.data.planted import make_planted

        return make_planted(**options)
    # -- OGB datasets and the user's own (dataset=ogbn_mag, dataset=custom) --------------------------
    if format == "ogb":
        from regnn.data.ogb import load_ogb

        return load_ogb(name=options.pop("ogb_name", name), root=dir, display_name=name, **options)
    if format == "custom":
        from regnn.data.custom import load_custom

        return load_custom(name=name, feats_type=feats_type, **options)
    # ----------------------------------------------------------------------------------------------------------
    if format == "magnn":
        spec = MagnnSpec.from_dict(dict(options["schema"], name=name)) if options.get("schema") else builtin_spec(name)
        root = Path(dir) if dir is not None else None
        if root is None:
            raise DataError(f"dataset {name}: no directory given (dataset.dir)")
        if verify:
            from regnn.data.fetch import DEFAULT_SUMS, read_sums, verify as verify_files

            pinned = {k.split("/", 1)[1]: v for k, v in read_sums(Path(sums or DEFAULT_SUMS), [spec.name]).items()}
            problems = verify_files(root, pinned) if root.is_dir() else []
            if problems:
                raise DataError("; ".join(problems))
        return load_magnn(root, spec, feats_type)
    raise DataError(f"unknown dataset format {format!r} (magnn, synthetic, synthetic_counts, ogb, custom)")
