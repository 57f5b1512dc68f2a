"""RE-GNN's models and full-batch trainer on a CUDA device, where DGL has no CUDA build: the GPU check of training.

A GPU machine with torch but without DGL (or with PyPI's CPU-only DGL) cannot load the datasets, so this runs in
two steps:

    # here, with the project's environment (DGL, Hydra, the data in data/):
    python scripts/device_train.py export --dataset dblp --models re_gcn gcn re_gat gat --out .devdata/dblp.pt
    # on the GPU machine, with any recent torch (regnn's code from this checkout, no DGL needed):
    python scripts/device_train.py run --bundle .devdata/dblp.pt --out results/device_train_dblp.json

`export` writes the relation graph as CSC/CSR arrays, the node features (sparse ones as COO), labels, splits and,
per model, the resolved configuration the experiments use (model arguments, optimiser, epochs, patience): all
that `run` needs, as plain tensors, lists and numbers.

`run` builds the graph with `Adjacency.from_arrays` (the attention layers' edge softmax then runs in torch) and:
  1. parity: every model in float64 without dropout, from the same initial weights, trained `--parity-steps`
     Adam steps on the CPU and on the GPU: the largest relative difference of the losses and of the parameters;
  2. training: `--seeds` runs of every model on the GPU with the configured trainer (float32, early stopping on
     validation loss, test at the best epoch): test Micro/Macro-F1 mean ± std, epochs, median seconds per epoch;
  3. with `--grid`, a validation search for one model (`--grid-model`) over weight decay x dropout x lambda,
     each setting trained with every one of `--grid-seeds`; settings ranked by mean validation Micro-F1.
The report is written after every step, so a run stopped by its time limit (`--budget-s`) keeps what it did
(`complete` says whether every run was made). `--device-sums sorted` makes the device side sum per-edge values over
sorted segments even on a CPU, so the GPU's code path can be tried (and its parity checked) on a machine without one.

`sums` times epochs of every model of the bundle (the trainer's deterministic mode, `--epochs` each, median after 5)
with the sums of per-edge values taken by index_add_ and by sorted segments (Adjacency.segment_sum, the default off
the CPU), one after the other in one process.
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import itertools
import json
import math
import os
import platform
import sys
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

BUNDLE_FORMAT = 1  # bumped when the bundle's keys change: an older bundle is refused with a clear message
GRID = {"weight_decay": [0.0, 5e-4, 1e-3, 5e-3], "dropout": [0.2, 0.5, 0.7], "scale": [10.0, 100.0]}


# -- export (here: DGL, Hydra and the data) -----------------------------------------------------------------------
def export(dataset: str, models: list[str], out: Path) -> dict:
    import torch
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import regnn.config  # noqa: F401  (registers the config checks)
    from regnn.models.regnn import RelationInputs
    from regnn.pipeline import load_data, model_kwargs

    cfgs = {}
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        for m in models:
            cfgs[m] = compose("train", overrides=[f"dataset={dataset}", f"model={m}"])
    arch = {m: c.model.get("arch", "regnn") for m, c in cfgs.items()}
    if any(a != "regnn" for a in arch.values()):
        raise SystemExit(f"device_train: only RE-GNN models (arch regnn) run from a bundle, got {arch}")
    dsets = {m: OmegaConf.to_container(c.dataset, resolve=True) for m, c in cfgs.items()}
    if len({json.dumps(d, sort_keys=True) for d in dsets.values()}) > 1:
        raise SystemExit("device_train: the models configure the dataset differently; export them apart")
    data = load_data(cfgs[models[0]].dataset)
    rg = RelationInputs.build(data).rg
    g = rg.graph
    feats = {}
    for t, x in data.features.items():
        if x.is_sparse:
            x = x.coalesce()
            feats[t] = {"indices": x.indices(), "values": x.values(), "size": list(x.shape)}
        else:
            feats[t] = {"dense": x}
    bundle = {
        "format": BUNDLE_FORMAT, "dataset": dataset, "num_nodes": g.num_nodes(), "num_edges": g.num_edges(),
        "csc": list(g.adj_tensors("csc")), "csr": list(g.adj_tensors("csr")), "rel": g.edata["rel"],
        "ntypes": list(rg.ntypes), "target_nodes": rg.nodes_of(data.target), "relation_names": list(rg.relation_names),
        "num_edge_relations": int(rg.num_edge_relations), "in_dims": {t: int(d) for t, d in data.in_dims.items()},
        "num_classes": int(data.num_classes), "features": feats, "labels": data.labels,
        "splits": dict(data.splits),
        "models": {m: {"kwargs": model_kwargs(c.model), "optimizer": OmegaConf.to_container(c.optimizer, resolve=True),
                       "max_epochs": int(c.trainer.max_epochs), "patience": int(c.trainer.patience),
                       "precision": str(c.precision)} for m, c in cfgs.items()},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(bundle, out)
    print(f"device_train: {dataset} ({g.num_nodes()} nodes, {g.num_edges()} edges) and {', '.join(models)} -> "
          f"{out} ({out.stat().st_size / 2**20:.1f} MB)")
    return bundle


# -- run (the GPU machine: torch alone) ----------------------------------------------------------------------------
def stand_in_dgl(force: bool = False) -> bool:
    """A `dgl` module where DGL is not installed or does not import (a wheel built for another torch), or with
    `force`: regnn's modules import it, and nothing this script calls uses it (its functions raise if called).
    True when the stand-in is in place."""
    if not force and importlib.util.find_spec("dgl") is not None:
        try:
            import dgl  # noqa: F401
            return False
        except Exception as e:  # e.g. DGL's CPU wheel for torch 2.2 under another torch
            print(f"device_train: DGL is installed but does not import ({type(e).__name__}: {e}); using a stand-in",
                  file=sys.stderr)
            for name in [m for m in sys.modules if m == "dgl" or m.startswith("dgl.")]:
                del sys.modules[name]

    def missing(*_a, **_k):
        raise RuntimeError("DGL is not installed here (or does not import): only regnn's pure-torch code runs")

    class Module(types.ModuleType):
        def __getattr__(self, name):  # any other name: a function that says DGL is missing
            if name.startswith("__"):
                raise AttributeError(name)
            return missing

    names = ("dgl", "dgl.nn", "dgl.nn.functional", "dgl.nn.pytorch", "dgl.ops", "dgl.dataloading", "dgl.function",
             "dgl.sampling", "dgl.data", "dgl.base")
    mods = {n: Module(n) for n in names}
    for n, m in mods.items():
        m.__path__ = []  # a package: submodules import
        m.__spec__ = importlib.machinery.ModuleSpec(n, None, is_package=True)
        parent, _, child = n.rpartition(".")
        if parent:
            setattr(mods[parent], child, m)
    mods["dgl"].__version__ = "stand-in"
    mods["dgl"].seed = lambda seed: None  # seed_everything seeds DGL's sampler too; none is used here
    mods["dgl"].DGLGraph = mods["dgl"].DGLHeteroGraph = type("DGLGraph", (), {})
    sys.modules.update(mods)
    return True


def _load_bundle(path: Path) -> dict:
    import torch

    if not path.is_file():
        raise SystemExit(f"device_train: no bundle at {path}; write one with `python scripts/device_train.py export`")
    b = torch.load(path, weights_only=True)
    if not isinstance(b, dict) or b.get("format") != BUNDLE_FORMAT:
        raise SystemExit(f"device_train: {path} is not a bundle of format {BUNDLE_FORMAT} (written by another "
                         "version of this script?); export it again")
    return b


def _on_device(b: dict, device) -> tuple:
    """(inputs, features, labels, splits) of bundle b on `device`, the graph built from its arrays."""
    import torch

    from regnn.core.adjacency import Adjacency
    from regnn.models.regnn import RelationInputs

    n = int(b["num_nodes"])
    adj = Adjacency.from_arrays(n, n, *(t.to(device) for t in (*b["csc"], *b["csr"])), b["rel"].to(device))
    inputs = RelationInputs(adj, list(b["ntypes"]), b["target_nodes"].to(device), None)
    feats = {}
    for t, f in b["features"].items():
        x = f["dense"] if "dense" in f else torch.sparse_coo_tensor(f["indices"], f["values"], f["size"]).coalesce()
        feats[t] = x.to(device)
    return inputs, feats, b["labels"].to(device), {s: i.to(device) for s, i in b["splits"].items()}


def _net(b: dict, kwargs: dict):
    from regnn.models.regnn import REGNN
    return REGNN(in_dims=b["in_dims"], num_classes=b["num_classes"], relation_names=b["relation_names"],
                 num_edge_relations=b["num_edge_relations"], **kwargs)


def device_sums(inputs, mode: str):
    """inputs with Adjacency.segment_sum's way on the device side: "auto" as regnn chooses it for the device
    (sorted segments off the CPU, index_add_ on it); "sorted" or "index_add" everywhere ("sorted" on a CPU: the
    GPU's code path, to try the script without a GPU). The way is part of the adjacency's backend."""
    import dataclasses
    if mode == "auto":
        return inputs
    adj = inputs.adj
    backend = dataclasses.replace(adj.backend, sorted_sums=mode == "sorted")
    return dataclasses.replace(inputs, adj=adj.to(adj.indptr.device, backend=backend))


def parity(b: dict, model: str, steps: int, loaded: dict, sums: str = "auto") -> dict:
    """float64, no dropout: `steps` Adam steps on CPU and on the GPU from the same weights; relative differences."""
    import torch
    import torch.nn.functional as F

    from regnn.training.trainer import make_optimizer

    spec = b["models"][model]
    kwargs = {**spec["kwargs"], "dropout": 0.0}
    if "attn_dropout" in kwargs:
        kwargs["attn_dropout"] = 0.0
    torch.manual_seed(0)
    init = _net(b, kwargs).double().state_dict()
    runs = {}
    for side, (inputs, feats, labels, splits) in loaded.items():
        inputs = device_sums(inputs, sums if side == "device" else "auto")
        net = _net(b, kwargs).double()
        net.load_state_dict(init)
        net = net.to(labels.device)
        feats = {t: x.double() for t, x in feats.items()}
        opt = make_optimizer(net.parameters(), **spec["optimizer"])
        losses = []
        for _ in range(steps):
            logits, _ = net(inputs, feats)
            loss = F.cross_entropy(logits[splits["train"]], labels[splits["train"]])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.detach().cpu())
        runs[side] = (torch.stack(losses), {k: v.detach().cpu() for k, v in net.state_dict().items()})
    (l_cpu, p_cpu), (l_gpu, p_gpu) = runs["cpu"], runs["device"]

    def rel(a, c):
        return float((a - c).abs().max() / c.abs().max().clamp(min=1e-30))

    return {"steps": steps, "loss_first": float(l_cpu[0]), "loss_last": float(l_cpu[-1]),
            "max_rel_diff_loss": rel(l_gpu, l_cpu),
            "max_rel_diff_params": max(rel(p_gpu[k], p_cpu[k]) for k in p_cpu
                                       if p_cpu[k].is_floating_point() and p_cpu[k].numel())}


def train_seeds(b: dict, spec: dict, seeds: list[int], loaded, deadline: float, sums: str = "auto") -> dict:
    """spec's model trained once per seed on the GPU (float32, the configured trainer); the seeds not started
    before `deadline` are left out (runs < len(seeds))."""
    import numpy as np
    import torch

    from regnn.evaluation.metrics import mean_std
    from regnn.training.seed import seed_everything
    from regnn.training.trainer import train_run

    inputs, feats, labels, splits = loaded
    per_run = []
    for seed in seeds:
        if time.time() > deadline:
            break
        seed_everything(seed)
        net = _net(b, spec["kwargs"]).to(labels.device)
        r = train_run(net, device_sums(inputs, sums), feats, labels, splits, seed=seed, optimizer=spec["optimizer"],
                      max_epochs=spec["max_epochs"], patience=spec["patience"], precision=spec["precision"])
        if labels.device.type == "cuda":
            torch.cuda.synchronize()
        per_run.append({"seed": seed, "best_epoch": r.best_epoch, "epochs": r.epochs, "train_time_s": r.train_time_s,
                        "median_epoch_s": float(np.median([h["epoch_time_s"] for h in r.history])),
                        **{k: r.metrics[k] for k in ("val_loss", "val_micro_f1", "val_macro_f1", "test_micro_f1",
                                                    "test_macro_f1")}})
    keys = ("test_micro_f1", "test_macro_f1", "val_micro_f1", "val_loss", "epochs", "median_epoch_s")
    return {"runs": len(per_run), "metrics": {k: mean_std([r[k] for r in per_run]) for k in keys} if per_run else {},
            "per_run": per_run}


def run(a) -> int:
    stand_in = stand_in_dgl(force=a.stand_in_dgl)
    import torch

    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("device_train: this torch sees no CUDA device; nothing to check", file=sys.stderr)
        return 2
    if a.max_epochs is not None and a.max_epochs < 1:
        raise SystemExit(f"device_train: --max-epochs must be at least 1, got {a.max_epochs}")
    started, deadline = time.time(), time.time() + a.budget_s
    b = _load_bundle(Path(a.bundle))
    gpu = _on_device(b, device)
    if a.max_epochs is not None:
        for spec in b["models"].values():
            spec["max_epochs"] = min(spec["max_epochs"], a.max_epochs)
    models = list(b["models"]) if a.models is None else a.models  # `--models` alone: none (e.g. the grid only)
    unknown = sorted(set(models) - set(b["models"]) | ({a.grid_model} - set(b["models"]) if a.grid else set()))
    if unknown:
        raise SystemExit(f"device_train: {unknown} not in the bundle (it holds {sorted(b['models'])})")
    report = {"dataset": b["dataset"],
              "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu", "sums": a.device_sums,
              "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
              "dgl": "stand-in (not installed)" if stand_in else "installed", "seeds": a.seeds,
              "parity_tolerance": a.tolerance, "parity": {}, "training": {}, "grid": None, "complete": False}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save():
        report["elapsed_s"] = time.time() - started
        out.write_text(json.dumps(report, indent=2) + "\n")

    if a.parity_steps:
        loaded = {"cpu": _on_device(b, torch.device("cpu")), "device": gpu}
        for m in models:
            report["parity"][m] = p = parity(b, m, a.parity_steps, loaded, a.device_sums)
            print(f"parity {m}: loss {p['loss_first']:.4f} -> {p['loss_last']:.4f} over {p['steps']} steps, "
                  f"largest relative difference CPU vs GPU: losses {p['max_rel_diff_loss']:.1e}, "
                  f"parameters {p['max_rel_diff_params']:.1e}", flush=True)
            save()
        report["parity_passed"] = all(max(p["max_rel_diff_loss"], p["max_rel_diff_params"]) <= a.tolerance
                                      for p in report["parity"].values())
    skipped = False  # a run left out for lack of time: the report is not complete
    for m in models:
        report["training"][m] = t = train_seeds(b, b["models"][m], a.seeds, gpu, deadline, a.device_sums)
        skipped |= t["runs"] < len(a.seeds)
        if t["runs"]:
            mm = t["metrics"]
            print(f"train {m}: {t['runs']} runs, test Micro-F1 {mm['test_micro_f1']['mean']:.2f} ± "
                  f"{mm['test_micro_f1']['std']:.2f}, Macro-F1 {mm['test_macro_f1']['mean']:.2f} ± "
                  f"{mm['test_macro_f1']['std']:.2f}, {1e3 * mm['median_epoch_s']['mean']:.1f} ms/epoch", flush=True)
        save()
    if a.grid:
        base = b["models"][a.grid_model]
        settings = []
        report["grid"] = {"model": a.grid_model, "space": GRID, "seeds": a.grid_seeds,
                          "ranked_by": "mean validation Micro-F1", "settings": settings}
        for wd, p, lam in itertools.product(*GRID.values()):
            if time.time() > deadline:
                skipped = True
                break
            kw = {**base["kwargs"], "dropout": p, "scale": lam}
            if "attn_dropout" in kw:
                kw["attn_dropout"] = p  # the authors' RE-GAT uses the feature dropout rate on the attention too
            spec = {**base, "kwargs": kw, "optimizer": {**base["optimizer"], "weight_decay": wd}}
            res = train_seeds(b, spec, a.grid_seeds, gpu, deadline, a.device_sums)
            if res["runs"] < len(a.grid_seeds):
                skipped = True
                break  # out of time inside this setting: leave it out rather than rank it on fewer seeds
            settings.append({"weight_decay": wd, "dropout": p, "scale": lam, "runs": res["runs"], **res["metrics"]})
            mm = res["metrics"]
            print(f"grid wd {wd:g} dropout {p:g} lambda {lam:g}: val Micro-F1 {mm['val_micro_f1']['mean']:.2f}, "
                  f"val loss {mm['val_loss']['mean']:.4f}, test Micro-F1 {mm['test_micro_f1']['mean']:.2f} ± "
                  f"{mm['test_micro_f1']['std']:.2f}", flush=True)
            settings.sort(key=lambda s: (math.isnan(s["val_micro_f1"]["mean"]), -s["val_micro_f1"]["mean"]))
            save()
    report["complete"] = not skipped
    save()
    print(f"device_train: report -> {out} ({time.time() - started:.0f}s"
          f"{'' if report['complete'] else ', runs left out by --budget-s'})")
    return 0 if report.get("parity_passed", True) else 1


def sums(a) -> int:
    """Epoch times with Adjacency.segment_sum's two ways of summing, on the same device in one process."""
    stand_in_dgl(force=a.stand_in_dgl)
    import numpy as np
    import torch

    from regnn.training.seed import seed_everything
    from regnn.training.trainer import train_run

    if a.epochs <= 5:
        raise SystemExit(f"device_train: --epochs must exceed the 5 warm-up epochs, got {a.epochs}")
    device = torch.device(a.device)
    b = _load_bundle(Path(a.bundle))
    inputs, feats, labels, splits = _on_device(b, device)
    res = {}
    ways = ["index_add", "sorted"]
    for i, model in enumerate(a.models or list(b["models"])):
        for name in (ways if i % 2 == 0 else ways[::-1]):  # each way first for every other model
            spec = b["models"][model]
            seed_everything(0)
            net = _net(b, spec["kwargs"]).to(device)
            r = train_run(net, device_sums(inputs, name), feats, labels, splits, seed=0, optimizer=spec["optimizer"],
                          max_epochs=a.epochs, patience=10**6, precision=spec["precision"])
            ms = 1e3 * float(np.median([h["epoch_time_s"] for h in r.history[5:]]))
            res[f"{model} {name}"] = {"ms_per_epoch": ms, "last_val_loss": r.history[-1]["val_loss"]}
            print(f"{model:7s} {name:10s} {ms:8.2f} ms/epoch  val loss after {a.epochs} epochs "
                  f"{r.history[-1]['val_loss']:.6f}", flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="write a dataset bundle (needs DGL, Hydra and the data)")
    e.add_argument("--dataset", default="dblp")
    e.add_argument("--models", nargs="+", default=["re_gcn", "gcn", "re_gat", "gat"])
    e.add_argument("--out", required=True)
    r = sub.add_parser("run", help="train from a bundle on a GPU (torch alone)")
    r.add_argument("--bundle", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--models", nargs="*", help="models of the bundle to check (default: all; none: only the grid)")
    r.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    r.add_argument("--parity-steps", type=int, default=5, help="Adam steps of the CPU/GPU comparison (0: none)")
    r.add_argument("--tolerance", type=float, default=1e-9, help="largest relative difference allowed (float64)")
    r.add_argument("--grid", action="store_true", help="validation search over weight decay x dropout x lambda")
    r.add_argument("--grid-model", default="re_gat")
    r.add_argument("--grid-seeds", type=int, nargs="+", default=list(range(5)), help="the seeds of every setting")
    r.add_argument("--max-epochs", type=int, help="at most this many epochs per run (default: as configured)")
    r.add_argument("--budget-s", type=float, default=480, help="stop starting runs after this many seconds")
    r.add_argument("--device", default="cuda", help="cuda (the point of it), or cpu to try the script here")
    r.add_argument("--stand-in-dgl", action="store_true", help="use the DGL stand-in even where DGL is installed")
    r.add_argument("--device-sums", choices=("auto", "sorted"), default="auto",
                   help="segment sums on the device side: as configured, or sorted everywhere (the GPU's path on a CPU)")
    t = sub.add_parser("sums", help="epoch times with index_add_ vs sorted segment sums (a GPU)")
    t.add_argument("--bundle", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--models", nargs="*", help="models of the bundle (default: all)")
    t.add_argument("--epochs", type=int, default=40)
    t.add_argument("--device", default="cuda")
    t.add_argument("--stand-in-dgl", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "sums":
        return sums(a)
    if a.cmd == "export":
        out = Path(a.out)
        export(a.dataset, a.models, out)
        return 0
    return run(a)


if __name__ == "__main__":
    # the CPU side runs regnn's pure-torch path unless told otherwise: no kernel build on the GPU machine
    os.environ.setdefault("REGNN_KERNELS", "0")
    raise SystemExit(main())
