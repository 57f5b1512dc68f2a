"""What a backbone's builder returns (regnn.models.backbones): the conv calls, their relation-weight heads, the
output layer and the dropout placement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from torch import nn


@dataclass
class Stack:
    convs: list[nn.Module]  # one per call, in order
    relation_heads: list[int]  # relation weights per distinct layer: 1 or one per attention head
    head: nn.Module | None  # output layer after the convs (None: the last conv outputs class scores)
    relation_of: list[int] | None = None  # per call, its layer's index into relation_heads (None: call i, layer i)
    # per call, how many dropout masks (of the model's rate) its input gets; None: the model's placement
    # (one before every call, or two before calls 1.. with double_dropout)
    dropout_masks: list[int] | None = None


class StackShape(NamedTuple):
    """What every backbone builder and every heterogeneous baseline is built from besides its own config keys: the
    config's hidden width and layer count, and the dataset's number of classes."""

    hidden: int  # units of a hidden layer (per head for the attention stacks)
    num_classes: int
    num_layers: int
