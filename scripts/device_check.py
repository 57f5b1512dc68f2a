"""GPU check of RE-GNN's pure-torch aggregation: the path every CUDA run takes (the fused kernels are CPU-only).

Needs a torch with CUDA; DGL is not needed. Where DGL is missing (a CUDA machine without DGL's CUDA build) a
stand-in module lets `regnn.core` import, and the graph is given to `Adjacency.from_arrays` as CSC/CSR arrays.

On the GPU it checks, against a dense float64 reference on the same device:
  - `normalized_spmm` with relation weights, norms both / right / none: output and the gradients of the features
    and of the relation weights (both SDDMM paths: 5 and 16 columns);
  - `spmm` with per-edge weights and `aggregate_heads` (the attention layers' aggregation): output and gradients;
then times forward + backward of the relation-weighted and the plain aggregation at DBLP's size (26,128 nodes,
265,694 edges, 11 relation types, 64 wide, float32) and writes a JSON report.

    python scripts/device_check.py --out results/device_check.json
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

from device_train import stand_in_dgl  # this folder's: the same stand-in as device_train's

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def random_adjacency(n: int, e: int, num_rel: int, device, seed: int = 0):
    """(Adjacency, src, dst, rel) of a random multigraph with typed edges, edge ids in random order."""
    from regnn.core.adjacency import Adjacency
    g = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=g), torch.randint(0, n, (e,), generator=g)
    rel = torch.randint(0, num_rel, (e,), generator=g)
    csc = torch.argsort(dst * n + src, stable=True)  # by destination: DGL's adj_tensors("csc") order
    csr = torch.argsort(src * n + dst, stable=True)
    indptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.bincount(dst, minlength=n).cumsum(0)])
    t_indptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.bincount(src, minlength=n).cumsum(0)])
    arrays = [indptr, src[csc], csc, t_indptr, dst[csr], csr, rel]
    adj = Adjacency.from_arrays(n, n, *(a.to(device) for a in arrays))
    return adj, src.to(device), dst.to(device), rel.to(device)


def dense_reference(n, src, dst, w, h, norm):
    a = torch.zeros(n, n, dtype=h.dtype, device=h.device).index_put((dst, src), w, accumulate=True)
    d = a.sum(1).clamp(min=1)
    if norm == "both":
        return d.pow(-0.5)[:, None] * (a @ (d.pow(-0.5)[:, None] * h))
    return (a @ h) / d[:, None] if norm == "right" else a @ h


def max_rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got - want).abs().max().detach() / want.abs().max().detach().clamp(min=1e-30))


def correctness(device) -> dict:
    from regnn.core.attention import aggregate_heads
    n, e, r = 300, 2400, 5
    adj, src, dst, rel = random_adjacency(n, e, r, device, seed=1)
    out = {}
    for dim in (5, 16):
        for norm in ("both", "right", "none"):
            h = torch.randn(n, dim, dtype=torch.float64, device=device, requires_grad=True)
            alpha = (torch.rand(r, 1, dtype=torch.float64, device=device) * 2 + 0.1).requires_grad_()
            G = torch.randn(n, dim, dtype=torch.float64, device=device)
            got = adj.normalized_spmm(h, alpha, norm)
            (got * G).sum().backward()
            gh, ga = h.grad.clone(), alpha.grad.clone()
            h.grad = alpha.grad = None
            want = dense_reference(n, src, dst, alpha[rel, 0], h, norm)
            (want * G).sum().backward()
            out[f"normalized_spmm_{norm}_{dim}"] = max(max_rel_err(got, want), max_rel_err(gh, h.grad),
                                                       max_rel_err(ga, alpha.grad))
    # per-edge weights (CSR order) and the multi-head aggregation of the attention layers
    w = torch.rand(e, dtype=torch.float64, device=device, requires_grad=True)
    h = torch.randn(n, 16, dtype=torch.float64, device=device, requires_grad=True)
    G = torch.randn(n, 16, dtype=torch.float64, device=device)
    (adj.spmm(h, w) * G).sum().backward()
    got = (adj.spmm(h, w).detach(), h.grad.clone(), w.grad.clone())
    h.grad = w.grad = None
    src_csr = adj.indices  # CSR order: the edge order of w
    want = dense_reference(n, src_csr, adj.dst_of, w, h, "none")
    (want * G).sum().backward()
    out["spmm_edge_weights_16"] = max(max_rel_err(got[0], want), max_rel_err(got[1], h.grad),
                                      max_rel_err(got[2], w.grad))
    heads = 3
    z = torch.randn(n, heads, 8, dtype=torch.float64, device=device, requires_grad=True)
    att = torch.rand(e, heads, dtype=torch.float64, device=device, requires_grad=True)
    G = torch.randn(n, heads, 8, dtype=torch.float64, device=device)
    got = aggregate_heads(adj, z, att)
    (got * G).sum().backward()
    gz, gatt = z.grad.clone(), att.grad.clone()
    z.grad = att.grad = None
    want = torch.stack([dense_reference(n, src_csr, adj.dst_of, att[:, k], z[:, k], "none") for k in range(heads)], 1)
    (want * G).sum().backward()
    out["aggregate_heads_3x8"] = max(max_rel_err(got, want), max_rel_err(gz, z.grad), max_rel_err(gatt, att.grad))
    return out


def timing(device, reps: int = 50) -> dict:
    n, e, r, dim = 26128, 265694, 11, 64  # DBLP's relation graph: nodes, edges with self-loops, relation types
    adj, *_ = random_adjacency(n, e, r, device, seed=2)
    h = torch.randn(n, dim, device=device, requires_grad=True)
    alpha = torch.ones(r, 1, device=device, requires_grad=True)
    G = torch.randn(n, dim, device=device)

    def step(weighted: bool):
        out = adj.normalized_spmm(h, alpha if weighted else None, "both")
        (out * G).sum().backward()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    res = {}
    for name, weighted in (("plain", False), ("relation_weighted", True), ("plain_again", False)):
        for _ in range(5):
            step(weighted)
        sync()
        t = time.perf_counter()
        for _ in range(reps):
            step(weighted)
        sync()
        res[f"{name}_fwd_bwd_ms"] = (time.perf_counter() - t) / reps * 1e3
    res["ratio_weighted_to_plain"] = res["relation_weighted_fwd_bwd_ms"] / min(res["plain_fwd_bwd_ms"],
                                                                             res["plain_again_fwd_bwd_ms"])
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "results" / "device_check.json"))
    ap.add_argument("--tolerance", type=float, default=1e-9, help="largest relative error allowed (float64)")
    ap.add_argument("--device", default="cuda", help="cuda (the point of it), or cpu to try the script itself")
    a = ap.parse_args(argv)
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("device_check: this torch sees no CUDA device; nothing to check", file=sys.stderr)
        return 2
    stand_in = stand_in_dgl()
    errors = correctness(device)
    report = {"device": torch.cuda.get_device_name(0) if device.type == "cuda" else (platform.processor() or platform.machine()), "torch": torch.__version__, "cuda": torch.version.cuda,
              "python": platform.python_version(), "dgl": "stand-in (not installed)" if stand_in else "installed",
              "max_relative_error_float64": errors, "tolerance": a.tolerance,
              "passed": all(v <= a.tolerance for v in errors.values()),
              "timing_dblp_size_float32": timing(device)}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
