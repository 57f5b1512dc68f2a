"""Layer stacks per backbone, built from regnn.nn's layers. A builder returns the conv layers in the order they
are called (each maps (h, adj, alpha=) -> (num_dst, d); a layer called twice appears twice), the number of
relation-weight heads each distinct layer needs, which of those each call uses, and the output head (None: the
last conv is the output).

Registering a new homogeneous backbone means writing one builder here (its keyword arguments are the keys its
config may hold: regnn.schema) and its config in conf/backbone/; the model, the relation embeddings, the trainer
and the model names (re_<name>, <name>, ...) follow (docs/adding_a_backbone.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from torch import nn

from regnn.models.dense_backbones import appnp, mlp
from regnn.models.stack import Stack, StackShape
from regnn.names import INPUT_WIDTHS
from regnn.nn import REGATConv, REGATv2Conv, REGCNConv, REGINConv, REMixHopConv, RESAGEConv
from regnn.nn.attention import AttentionOptions
from regnn.nn.propagation import ACTIVATIONS

LAYOUTS = ("authors", "stack")


class HeadsLinear(nn.Module):
    """Output layer over concatenated heads: class scores Linear(heads * dim -> classes); the representation
    (for clustering and t-SNE) is the mean over the heads, as the authors' REGAT returns."""

    def __init__(self, heads: int, dim: int, num_classes: int):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.lin = nn.Linear(heads * dim, num_classes)

    def forward(self, h):
        return self.lin(h)

    def represent(self, h):
        return h.view(-1, self.heads, self.dim).mean(1)


class NormAct(nn.Module):
    """conv -> optional LayerNorm -> activation: one hidden layer of the "stack" layout."""

    def __init__(self, conv: nn.Module, dim: int, layer_norm: bool, activation: str):
        super().__init__()
        self.conv = conv
        self.norm = nn.LayerNorm(dim) if layer_norm else None
        self.activation = ACTIVATIONS[activation]

    @property
    def prepare_norm(self) -> str | None:
        """The wrapped conv's (see REGCNConv.prepare_norm), so that mini-batch stacks prepare too."""
        return getattr(self.conv, "prepare_norm", None)

    @property
    def takes_factors(self) -> bool:
        """Whether forward takes its input as a ProjectAfterHop (the wrapped conv's)."""
        return getattr(self.conv, "takes_factors", False)

    def forward(self, h, adj, alpha=None):
        h = self.conv(h, adj, alpha=alpha)
        h = self.norm(h) if self.norm is not None else h
        return self.activation(h) if self.activation else h


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")


def _authors_layout(layer, hidden: int, num_classes: int, num_layers: int, activation: str) -> Stack:
    """The authors' RE-GCN (and RE-GraphSAGE) layout: num_layers propagation steps on the weighted graph; the
    first and last only propagate (no W), the ones between have W, bias and ELU; a linear layer outputs."""
    convs = []
    for i in range(num_layers):
        edge = i == 0 or i == num_layers - 1
        convs.append(layer(hidden, hidden, weight=not edge, activation="none" if edge else activation))
    return Stack(convs, [1] * num_layers, nn.Linear(hidden, num_classes))


def gcn(
    shape: StackShape,
    activation: str = "elu",
    norm: str = "both",
    layout: str = "authors",
    layer_norm: bool = False,
) -> Stack:
    """layout="authors" (the authors' RE-GCN, see _authors_layout); layout="stack" (mini-batch training):
    num_layers GCN layers, each with W, bias, optional LayerNorm and the activation, then a linear output layer."""
    hidden, num_classes, num_layers = shape
    _check_layout(layout)
    if layout == "stack":
        convs = [
            NormAct(REGCNConv(hidden, hidden, norm=norm), hidden, layer_norm, activation) for _ in range(num_layers)
        ]
        return Stack(convs, [1] * num_layers, nn.Linear(hidden, num_classes))
    return _authors_layout(
        lambda i, o, **kw: REGCNConv(i, o, norm=norm, **kw), hidden, num_classes, num_layers, activation
    )


def sage(shape: StackShape, activation: str = "elu") -> Stack:
    hidden, num_classes, num_layers = shape
    return _authors_layout(RESAGEConv, hidden, num_classes, num_layers, activation)


def projected_width(hidden: int, heads: int = 1, input_width: str = "head") -> int:
    """The width each node type's input is projected to, which the first layer takes: one head's (hidden, the
    authors') or a whole layer's (heads x hidden: one-hot ids then get embeddings as wide as the layers)."""
    if input_width not in INPUT_WIDTHS:
        raise ValueError(f"input_width must be one of {list(INPUT_WIDTHS)}, got {input_width!r}")
    return hidden * heads if input_width == "layer" else hidden


def _released_attention_stack(conv, shape: StackShape, first, heads, attn_dropout, options) -> Stack:
    """The authors' released REGAT stack (model/REGAT.py at 2e297ef), for GAT and GATv2 layers alike: layer 0
    and layers 1..L-2 with W, `heads` heads concatenated and the activation; the last layer without W
    (attention over the previous layer's heads x hidden features) and without activation, called twice (once
    as the loop's last layer, once as the "output projection"); a Linear over the concatenated heads outputs.
    options.residual: the released layers' residual argument (a linear map of a layer's input added to its
    output), on every layer but the first, as REGAT passes it; the paper's runs leave it off. first: the width of
    layer 0's input (projected_width)."""
    hidden, num_classes, num_layers = shape
    if num_layers < 2:
        raise ValueError(f"the released attention stack needs num_layers >= 2, got {num_layers}")
    convs = [
        conv(
            first if i == 0 else hidden * heads,
            hidden,
            heads=heads,
            attn_dropout=attn_dropout,
            options=replace(options, residual=options.residual and i > 0),
        )
        for i in range(num_layers - 1)
    ]
    last_options = replace(options, activation="none", weight=False)
    last = conv(hidden * heads, hidden, heads=heads, attn_dropout=attn_dropout, options=last_options)
    convs += [last, last]
    return Stack(
        convs,
        [heads] * num_layers,
        HeadsLinear(heads, hidden, num_classes),
        relation_of=list(range(num_layers)) + [num_layers - 1],
    )


def gat(
    shape: StackShape,
    heads: int = 4,
    activation: str = "elu",
    attn_dropout: float = 0.6,
    attn_negative_slope: float = 0.01,
    attn_init: str = "xavier",
    residual: bool = False,
    input_width: str = "head",
    layout: str = "authors",
    layer_norm: bool = False,
) -> Stack:
    """layout="authors": the authors' released stack (see _released_attention_stack); layout="stack" (mini-batch
    training, one layer per sampled hop): num_layers GAT layers of `heads` x `hidden` units (concatenated,
    optional LayerNorm, activation), then a linear output layer. residual: every layer but the first adds a
    linear map of its input (the released layer's residual). input_width: what the first layer takes, each node
    type projected to one head's width or a layer's (projected_width; REGNN projects to the same)."""
    hidden, num_classes, num_layers = shape
    _check_layout(layout)
    first = projected_width(hidden, heads, input_width)
    options = AttentionOptions(False, attn_negative_slope, activation, residual, attn_init=attn_init)
    if layout == "stack":
        convs = [
            NormAct(
                REGATConv(
                    first if i == 0 else hidden * heads,
                    hidden,
                    heads=heads,
                    attn_dropout=attn_dropout,
                    options=replace(options, activation="none", residual=residual and i > 0),  # NormAct activates
                ),
                hidden * heads,
                layer_norm,
                activation,
            )
            for i in range(num_layers)
        ]
        return Stack(convs, [heads] * num_layers, nn.Linear(hidden * heads, num_classes))
    return _released_attention_stack(REGATConv, shape, first, heads, attn_dropout, options)


def gatv2(
    shape: StackShape,
    heads: int = 4,
    activation: str = "elu",
    attn_dropout: float = 0.6,
    attn_negative_slope: float = 0.01,
    attn_init: str = "xavier",
    residual: bool = False,
    input_width: str = "head",
    layout: str = "authors",
) -> Stack:
    """The authors' released stack with GATv2 layers (their REGAT with use_gatv2=True); input_width as GAT's."""
    if layout != "authors":
        raise ValueError(f"gatv2 has only the authors' layout, got layout={layout!r}")
    options = AttentionOptions(None, attn_negative_slope, activation, residual, attn_init=attn_init)
    first = projected_width(shape.hidden, heads, input_width)
    return _released_attention_stack(REGATv2Conv, shape, first, heads, attn_dropout, options)


class DropoutLinear(nn.Module):
    """The released REGIN's output "MLP": dropout, then a linear layer without bias."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.lin = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, h):
        return self.lin(self.dropout(h))


def gin(shape: StackShape, activation: str = "elu", mlp_dropout: float = 0.6) -> Stack:
    """The authors' released REGIN (model/REGIN.py at 2e297ef): layers 0..L-2 each the weighted mean over the
    in-edges, dropout, a linear layer without bias and the activation; layer L-1 the weighted mean alone; then
    dropout and a linear layer without bias output the classes (see REGINConv). Its only dropout is
    `mlp_dropout`, inside the layers and before the output (the model's layer-input dropout stays 0)."""
    hidden, num_classes, num_layers = shape
    convs = [REGINConv(hidden, hidden, activation=activation, mlp_dropout=mlp_dropout) for _ in range(num_layers - 1)]
    convs.append(REGINConv(hidden, hidden, activation="none", weight=False))
    return Stack(convs, [1] * num_layers, DropoutLinear(hidden, num_classes, mlp_dropout))


def mixhop(shape: StackShape, activation: str = "elu", powers=(0, 1, 2)) -> Stack:
    """The authors' released REMixHop (model/REMixHop.py at 2e297ef): num_layers MixHop layers (each: hidden units
    per power, concatenated; see REMixHopConv), then a linear output layer without bias. Its dropout (the model's
    rate): none on the projected input, two masks before layer 1 (the first layer's own dropout after its
    activation, then the model's), one before each later layer, none before the output layer."""
    hidden, num_classes, num_layers = shape
    width = hidden * len(powers)
    convs = [
        REMixHopConv(hidden if i == 0 else width, hidden, powers=tuple(powers), activation=activation)
        for i in range(num_layers)
    ]
    return Stack(
        convs,
        [1] * num_layers,
        nn.Linear(width, num_classes, bias=False),
        dropout_masks=[0] + [2] + [1] * (num_layers - 2) if num_layers > 1 else [0],
    )


BACKBONES: dict[str, Callable[..., Stack]] = {
    "gcn": gcn,
    "gat": gat,
    "sage": sage,
    "gin": gin,
    "gatv2": gatv2,
    "mixhop": mixhop,
    "mlp": mlp,
    "appnp": appnp,
}
