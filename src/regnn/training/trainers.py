"""Which trainer trains a full-batch model: one interface (train_run's arguments and RunResult) for both."""

from __future__ import annotations

from regnn.training.skipgram import fit as skipgram_fit
from regnn.training.trainer import train_run


def trainer_for(arch: str):
    """The full-batch trainer of a model architecture (models.ARCHS): train_run, epoch by epoch with early
    stopping, or for Metapath2vec the skip-gram passes and a classifier, with train_run's arguments and result."""
    return skipgram_fit if arch == "metapath2vec" else train_run
