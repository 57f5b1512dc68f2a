"""regnn.nn's layers under hostile use: one layer on thousands of graphs that share addresses, shapes and version
counters (views of one tensor, fresh tensors in freed memory, edits through .data and .numpy()) answers for each
exactly as a fresh layer does; every malformed input is refused with a ValueError naming it."""

import numpy as np
import pytest
import torch

from regnn.nn import REGATConv, REGATv2Conv, REGCNConv

R, T, C = 3, 2, 4  # relations, node types, feature width


def make(cls, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    layer = cls(C, 2, R, T, heads=2) if cls in (REGATConv, REGATv2Conv) else cls(C, 3, R, T)
    with torch.no_grad():  # relation weights away from 1 (some below 0: the LeakyReLU's slope)
        for p in layer.relations.parameters():
            p.copy_(torch.rand(p.shape) * 0.03 - 0.005)
    return layer.to(dtype)


def graph(n, e, g):
    ei = torch.randint(0, n, (2, e), generator=g)
    return ei, torch.randint(0, R, (e,), generator=g), torch.randint(0, T, (n,), generator=g)


class Twin:
    """A fresh layer with `layer`'s parameters, for every call: nothing kept from an earlier graph."""

    def __init__(self, layer):
        self.layer = layer

    def __call__(self, x, ei, et, nt):
        layer = self.layer
        heads = {"heads": layer.heads} if isinstance(layer, (REGATConv, REGATv2Conv)) else {}
        fresh = type(layer)(C, layer.out_channels, R, T, **heads).to(x.dtype)
        fresh.load_state_dict(layer.state_dict())
        return fresh(x, ei.clone(), et.clone(), nt.clone())


def hostile_calls(steps, seed=0):
    """(x, edge_index, edge_type, node_type) of `steps` calls whose tensors keep colliding in address, shape and
    version with the previous call's: fresh graphs of the last one's shape in its freed memory, views of one
    tensor at one address and of one shape, and edits that bump no version counter."""
    g = torch.Generator().manual_seed(seed)
    memory = (np.empty((2, 120), np.int64), np.empty(120, np.int64), np.empty(40, np.int64))
    ei = et = nt = x = None
    for i in range(steps):
        kind = i % 10
        if kind == 0:
            n = int(torch.randint(20, 61, (1,), generator=g))
            del ei, et, nt, x  # freed first: the new graph may take the same memory
            ei, et, nt = graph(n, int(torch.randint(n, 3 * n, (1,), generator=g)), g)
            x = torch.randn(n, C, generator=g, dtype=torch.float64)
            yield x, ei, et, nt
        elif kind in (5, 6):  # new tensors of one shape in one memory, twice in a row, as an allocator hands out
            for m, t in zip(memory, graph(40, 120, g)):
                m[...] = t.numpy()
            ei, et, nt = (torch.from_numpy(m) for m in memory)
            x = torch.randn(40, C, generator=g, dtype=torch.float64)
            yield x, ei, et, nt
        elif kind == 1:
            j = int(torch.randint(0, ei.shape[1], (1,), generator=g))
            ei.data[0, j] = (ei[0, j] + 1) % nt.numel()  # through .data: no version bump seen by ei
            et.data[j] = (et[j] + 1) % R
            yield x, ei, et, nt
        elif kind == 2:
            j = int(torch.randint(0, ei.shape[1], (1,), generator=g))
            ei.numpy()[1, j] = (int(ei[1, j]) + 1) % nt.numel()  # .numpy() shares the memory, bumps nothing
            nt.numpy()[j % nt.numel()] = (int(nt[j % nt.numel()]) + 1) % T
            yield x, ei, et, nt
        elif kind == 3:
            yield x, ei, et, nt  # the same graph again
        elif kind == 4:
            yield x, ei.clone(), et.clone(), nt.clone()  # the same graph in other tensors
        elif kind in (7, 8):  # (2, 60) views at one address: the first 60 edges, then every other edge
            yield (x, ei[:, :60], et[:60], nt) if kind == 7 else (x, ei[:, ::2], et[::2], nt)
        else:
            k = int(torch.randint(1, ei.shape[1], (1,), generator=g))
            yield x, ei[:, :k], et[:k], nt


@pytest.mark.parametrize("cls,steps", [(REGCNConv, 2000), (REGATConv, 1000)])
def test_one_layer_answers_for_every_graph_as_a_fresh_layer(cls, steps, set_threads):
    set_threads(1)  # small graphs: threads would only wait for each other
    layer = make(cls)
    twin = Twin(layer)
    mismatches = kept = 0
    with torch.no_grad():
        for call in hostile_calls(steps):
            before = layer._graph._adj
            out = layer(*call)
            kept += layer._graph._adj is before
            mismatches += not torch.equal(out, twin(*call))
            del call, out  # nothing of this call held here: the next graph may take its memory
    assert mismatches == 0
    # the graph is still kept between calls on the same content (a repeat, and a copy, every 10 calls)
    assert kept >= 2 * (steps // 10)


@pytest.mark.parametrize("cls", [REGCNConv, REGATConv])
def test_malformed_inputs_are_refused_naming_them(cls):
    layer = make(cls)
    x, ei = torch.randn(5, C, dtype=torch.float64), torch.tensor([[0, 1, 4], [1, 2, 3]])
    et, nt = torch.tensor([0, 1, 2]), torch.tensor([0, 1, 0, 1, 0])
    layer(x, ei, et, nt)  # a valid call first: the refusals below are not skipped for a kept graph
    bad = [
        ("node_type must be integral ids \\(N,\\) with N = x's 5 rows", (x, ei, et, nt[:4])),
        ("node_type must be integral ids \\(N,\\) with N = x's 6 rows", (torch.randn(6, C).double(), ei, et, nt)),
        ("node_type must be integral", (x, ei, et, nt.double())),
        ("x must be \\(N, in_channels=4\\)", (x[:, :3], ei, et, nt)),
        ("x must be \\(N, in_channels=4\\)", (x[0], ei, et, nt)),
        ("x has dtype torch.float32 but the layer's parameters are torch.float64", (x.float(), ei, et, nt)),
        ("edge_index must be integral \\(2, E\\)", (x, ei.double(), et, nt)),
        ("edge_index must be integral \\(2, E\\)", (x, ei.flatten(), et, nt)),
        ("edge_index must be integral \\(2, E\\)", (x, torch.cat([ei, ei[:1]]), et, nt)),
        ("edge_type must be integral \\(E,\\) with E = 3", (x, ei, et[:2], nt)),
        ("edge_type must be integral", (x, ei, et.float(), nt)),
        (
            "edge_index must lie in \\[0, 5\\) \\(node ids\\), got \\[-3, 4\\]",
            (x, ei * torch.tensor([[1], [-1]]), et, nt),
        ),
        ("edge_index must lie in \\[0, 5\\) \\(node ids\\), got \\[1, 5\\]", (x, ei + 1, et, nt)),
        ("edge_type must lie in \\[0, 3\\)", (x, ei, et - 1, nt)),
        ("edge_type must lie in \\[0, 3\\)", (x, ei, et + 1, nt)),
        ("node_type must lie in \\[0, 2\\)", (x, ei, et, nt + 1)),
        ("node_type must lie in \\[0, 2\\)", (x, ei, et, nt - 1)),
    ]
    for message, args in bad:
        with pytest.raises(ValueError, match=message):
            layer(*args)
    assert torch.equal(layer(x, ei, et, nt), Twin(layer)(x, ei, et, nt))  # a refusal leaves nothing behind


def test_an_edge_less_graph_and_a_layer_of_self_loops_only():
    layer = make(REGCNConv)
    x, nt = torch.randn(4, C, dtype=torch.float64), torch.tensor([0, 1, 1, 0])
    ei, et = torch.empty(2, 0, dtype=torch.long), torch.empty(0, dtype=torch.long)
    assert layer(x, ei, et, nt).shape == (4, 3)
    assert layer(x, torch.arange(4).repeat(2, 1), torch.zeros(4, dtype=torch.long), nt).shape == (4, 3)


@pytest.mark.parametrize("cls", [REGCNConv, REGATConv])
@pytest.mark.parametrize("edit", ["data", "data=", "in_place"])
def test_the_callers_relation_weights_edited_between_calls_are_read_again(cls, edit):
    """A caller who keeps its own relation weights and hands them as alpha= on a graph prepared once gets each
    call's answer for the values alpha holds at that call, whichever way they were changed since the last call:
    an edit through .data bumps no version counter."""
    from regnn.nn import typed_adjacency

    g = torch.Generator().manual_seed(3)
    ei, et, nt = graph(40, 160, g)
    adj = typed_adjacency(ei, et, nt, R)
    layer = (cls(C, 2, heads=2) if cls is REGATConv else cls(C, 3)).double()
    x = torch.randn(40, C, generator=g, dtype=torch.float64)
    heads = 2 if cls is REGATConv else 1
    alpha = torch.rand(R + T, heads, generator=g, dtype=torch.float64) + 0.5
    layer(x, adj, alpha=alpha)
    new = torch.rand(R + T, heads, generator=g, dtype=torch.float64) + 0.5
    if edit == "data":
        alpha.data.copy_(new)
    elif edit == "data=":  # as torch.nn.utils.vector_to_parameters does
        alpha.data = new.clone()
    else:
        alpha.copy_(new)
    fresh = layer(x, typed_adjacency(ei, et, nt, R), alpha=new.clone())
    assert torch.equal(layer(x, adj, alpha=alpha), fresh)
