"""The one list of what the experiments, the renderers, the Makefile and the tests cover.

A backbone with relation weights has a builder in regnn.models.backbones and a config in conf/backbone/; it
is trainable under the four relation settings of conf/relation/ by the model names below. Listing it in
FIGURE3_BACKBONES adds it to Figure 3 (conf/experiment/fig_backbones.yaml and regnn.reporting.backbones).
"""

from __future__ import annotations

from pathlib import Path

CONF = Path(__file__).resolve().parents[2] / "conf"

# relation setting (conf/relation/<key>.yaml) -> model name of a backbone under it
RELATIONS = {"re": "re_{}", "plain": "{}", "edge": "{}_e", "self": "{}_s"}
PAPER_DATASETS = ("dblp", "acm", "imdb")  # Tables 2 and 3
# Table 2's rows: the MLP and the heterogeneous baselines, then the homogeneous GNNs with and without RE
TABLE2_BASELINES = (
    "mlp",
    "metapath2vec",
    "rgcn",
    "hgt",
    "simple_hgn",
    "rhgnn",
    "han",
    "gtn",
    "magnn",
    "magnn_ac",
    "gcn_m",
    "gat_m",
)
TABLE2_MODELS = (*TABLE2_BASELINES, "gcn", "gat", "re_gcn", "re_gat")
FIGURE3_DATASETS = ("dblp", "acm")  # Figure 3
FIGURE3_BACKBONES = ("gcn", "gat", "sage", "gin", "gatv2", "mixhop")  # Figure 3's rows, in order
LABELS = {"gcn": "GCN", "gat": "GAT", "sage": "GraphSAGE", "gin": "GIN", "gatv2": "GATv2", "mixhop": "MixHop"}
ARCH_DEFAULT = "regnn"  # a model config without `arch` is a backbone with relation weights


def arch_name(model) -> str:
    """The architecture a model config names (model.arch, regnn.models.ARCHS' key)."""
    return str(model.get("arch", ARCH_DEFAULT))


def backbones() -> list[str]:
    """Every backbone with a config in conf/backbone/ (those trainable with the relation group)."""
    return sorted(p.stem for p in (CONF / "backbone").glob("*.yaml"))


def model_name(backbone: str, relation: str) -> str:
    """The model name (and cell name part) of a backbone under a relation setting: gcn, re -> re_gcn."""
    return RELATIONS[relation].format(backbone)


def models(
    relations: str | tuple[str, ...] = ("plain", "re"), backbones_: tuple[str, ...] = FIGURE3_BACKBONES
) -> list[str]:
    """Model names backbone by backbone, each under the given relation settings (Figure 3: plain, then RE)."""
    rels = relations.split("+") if isinstance(relations, str) else relations
    return [model_name(b, r) for b in backbones_ for r in rels]


def label(backbone: str) -> str:
    return LABELS.get(backbone, backbone.upper())


RELATION_LABELS = {"re": "RE-{}", "plain": "{}", "edge": "{}-E", "self": "{}-S"}


def parse(model: str) -> tuple[str, str] | None:
    """(backbone, relation) of a model name of the relation group (re_gcn -> (gcn, re)), else None."""
    for backbone in backbones():
        for relation in RELATIONS:
            if model_name(backbone, relation) == model:
                return backbone, relation
    return None


def model_label(model: str) -> str | None:
    """RE-GCN, GCN, GCN-E, GCN-S, ... for a model name of the relation group, else None."""
    parsed = parse(model)
    return RELATION_LABELS[parsed[1]].format(label(parsed[0])) if parsed else None


if __name__ == "__main__":  # `python -m regnn.catalog models plain+re`: a comma-separated list for the shell
    import sys

    what = sys.argv[1] if len(sys.argv) > 1 else "models"
    if what == "models":
        print(",".join(models(sys.argv[2] if len(sys.argv) > 2 else "plain+re")))
    elif what == "backbones":
        print(" ".join(FIGURE3_BACKBONES))
    else:
        print(" ".join(FIGURE3_DATASETS if what == "figure3_datasets" else PAPER_DATASETS))
