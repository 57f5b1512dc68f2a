"""The names a config's values are checked against, in a module that imports nothing heavy.

regnn.config checks a command's config before torch is imported (torch alone takes seconds to import), so that a
typo or an out-of-range value is answered at once; the modules that act on these values (the trainers, the
sampler, the device choice, the data loaders) import the same names from here.
"""

from __future__ import annotations

SPLITS = ("train", "val", "test")  # a dataset's labelled splits, in this order everywhere
PRECISIONS = ("fp32", "bf16")  # trainer.precision (regnn.training.trainer.autocast)
OPTIMIZERS = ("adam", "adamw", "sgd")  # optimizer.name (regnn.training.trainer.make_optimizer)
LR_SCHEDULES = ("constant", "cosine", "onecycle")  # trainer.lr_schedule (regnn.training.trainer.make_schedule)
# what early stopping can watch (trainer.stop_on): name -> whether higher is better
MONITORS = {"val_loss": False, "val_micro_f1": True, "val_macro_f1": True, "val_acc": True}
SAMPLING_MODES = ("deterministic", "parallel")  # trainer.sampling of trainer=minibatch (regnn.training.sampling)
# where the first layer's dropout applies (trainer.input_dropout of trainer=minibatch): see
# regnn.models.sampled.SampledREGNN
INPUT_DROPOUT = ("projected", "features")
ATTN_INITS = ("xavier", "zeros")  # model.attn_init of the attention backbones (regnn.nn.attention)
# model.input_width of GAT: each node type is projected to one head's width (hidden, the authors') or to a layer's
# (heads x hidden), the width of the first attention layer's input (regnn.models.backbones.projected_width)
INPUT_WIDTHS = ("head", "layer")

# dataset.feats_type (regnn.data.features):
# raw: every type its own features (one-hot ids where a type has none)   [authors' feats_type 0]
# target_zeros: target type raw, every other type a 10-d zero vector      [authors' feats_type 1]
# target_onehot: target type raw, every other type one-hot ids            [authors' feats_type 2]
FEATS_TYPES = ("raw", "target_zeros", "target_onehot")

DEVICES = ("auto", "cpu", "cuda")  # and cuda:N
# progress: a bar on a terminal and log lines elsewhere (auto), either always, or nothing (off; false)
PROGRESS_MODES = ("auto", "bar", "lines", "off")


def is_device_name(requested: str) -> bool:
    """Whether `requested` names a device regnn.training.device.select_device takes (auto, cpu, cuda or cuda:N)."""
    return requested in DEVICES or (requested.startswith("cuda:") and requested[5:].isdigit())


# the keys of every dataset config: load_dataset's own, the display name and the meta-paths (read by the models)
COMMON_DATASET_KEYS = frozenset(
    {
        "name",
        "format",
        "dir",
        "feats_type",
        "verify",
        "sums",
        "feature_norm",
        "display_name",
        "metapaths",
        "drop_relations",
    }
)
# dataset.format -> the keys its loader takes besides the common ones (regnn.data.dataset_keys reads them from the
# loaders' signatures; tests/test_first_line.py holds the two equal); another format reads the MAGNN files
_LOADER_KEYS = {
    "magnn": ("schema",),
    "synthetic": (
        *("num_items", "num_sources", "num_tags", "num_classes", "trusted_degree", "random_degree"),
        *("feat_dim", "signal", "seed"),
    ),
    "synthetic_counts": (
        *("num_items", "num_users", "num_tags", "num_classes", "feat_dim", "max_rate", "overlap"),
        *("user_degree", "homophily", "tag_degree", "seed"),
    ),
    "planted": (
        *("num_items", "relations", "planted", "noise", "degree", "nodes_per_relation", "num_classes", "feat_dim"),
        *("signal", "seed", "per_node", "shares", "through"),
    ),
    "ogb": ("name", "ogb_name", "featureless", "feature_file"),
    "custom": ("path", "name", "feats_type"),
}
DATASET_KEYS = {fmt: COMMON_DATASET_KEYS | set(keys) for fmt, keys in _LOADER_KEYS.items()}


def dataset_keys(format: str) -> set[str]:
    """The keys a dataset config of this format may hold."""
    return set(DATASET_KEYS.get(format, DATASET_KEYS["magnn"]))
