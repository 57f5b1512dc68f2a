"""Train the R-HGNN authors' own model classes (yule-BUAA/R-HGNN at b6440ed, imported unchanged from a checkout)
on one of this repository's datasets, full batch, with this repository's features and split.

    git clone https://github.com/yule-BUAA/R-HGNN /tmp/R-HGNN && git -C /tmp/R-HGNN checkout b6440ed
    .venv/bin/python scripts/reference/reference_rhgnn.py --repo /tmp/R-HGNN --dataset imdb --data-dir data/IMDB \
        --seeds 0 1 2 3 4 --hidden 16 --out results/reference_rhgnn_imdb.json

The authors' repository ships only an OGBN-MAG mini-batch script. This driver trains with that script's parts,
imported from the checkout: the model (model/R_HGNN.py), the classifier (utils/Classifier.py), Adam with the
learning rate annealed by a cosine to lr/100 (utils.get_optimizer_and_lr_scheduler, one step per epoch here),
early stopping with patience 50 where an epoch is the best only when validation accuracy and Macro-F1 both improve
(utils/EarlyStopping.py; --stop loss: validation loss instead), their accuracy and Macro-F1
(utils.evaluate_node_classification), at most 200 epochs, and the test scores of the best epoch's weights.
Defaults are the released settings (64 hidden x 8 heads; the RE-GNN paper trains 16).
"""

import copy
import json
import sys
import tempfile
import time

import torch
import torch.nn as nn
from reference_runs import check, parser, summarise  # scripts/ is on the path as the script's folder


def main():
    p = parser("yule-BUAA/R-HGNN")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--relation-hidden", type=int, default=8)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--wd", type=float, default=0.0)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--patience", type=int, default=50)
    p.add_argument("--no-residual", action="store_true")
    p.add_argument("--feats-type", default=None, help="default: the dataset's (the RE-GNN authors', as conf/dataset)")
    p.add_argument(
        "--stop",
        choices=["metrics", "loss"],
        default="metrics",
        help="metrics: validation accuracy and Macro-F1 must both improve (the authors'); loss: validation loss",
    )
    p.add_argument("--constant-lr", action="store_true", help="no cosine annealing")
    a = p.parse_args()
    check(a, "yule-BUAA/R-HGNN", "model/R_HGNN.py")
    torch.set_num_threads(a.threads)
    sys.path.insert(0, a.repo)
    from model.R_HGNN import R_HGNN
    from utils.Classifier import Classifier
    from utils.EarlyStopping import EarlyStopping
    from utils.utils import evaluate_node_classification, get_optimizer_and_lr_scheduler, set_random_seed

    from regnn.data import load_dataset

    ds = load_dataset(a.dataset, dir=a.data_dir, feats_type=a.feats_type)
    g = ds.graph
    for t in g.ntypes:
        x = ds.features[t]
        g.nodes[t].data["feat"] = (x.to_dense() if x.is_sparse else x).float()
    labels, split = ds.labels, ds.splits
    feats = {(s, e, d): g.nodes[d].data["feat"] for s, e, d in g.canonical_etypes}
    blocks = [g] * a.layers  # full batch: the whole graph is every layer's block
    loss_f = nn.CrossEntropyLoss()
    # the authors' EarlyStopping saves the best weights to a file; removed when the script ends
    checkpoints = tempfile.TemporaryDirectory(prefix="reference_rhgnn_")

    def forward(model):
        rep, _ = model[0](blocks, copy.deepcopy(feats))  # R_HGNN projects its input dict in place
        return model[1](rep[ds.target])

    def scores(logits, idx):
        acc, macro = evaluate_node_classification(predicts=logits[idx].argmax(1), labels=labels[idx])
        return acc * 100, macro * 100

    rows = []
    for seed in a.seeds:
        set_random_seed(seed)
        r_hgnn = R_HGNN(
            graph=g,
            input_dim_dict={t: g.nodes[t].data["feat"].shape[1] for t in g.ntypes},
            hidden_dim=a.hidden,
            relation_input_dim=a.relation_hidden,
            relation_hidden_dim=a.relation_hidden,
            num_layers=a.layers,
            n_heads=a.heads,
            dropout=a.dropout,
            residual=not a.no_residual,
        )
        model = nn.Sequential(r_hgnn, Classifier(n_hid=a.hidden * a.heads, n_out=ds.num_classes))
        opt, sched = get_optimizer_and_lr_scheduler(model, "adam", a.lr, a.wd, steps_per_epoch=1, epochs=a.epochs)
        stopper = EarlyStopping(patience=a.patience, save_model_folder=checkpoints.name, save_model_name=f"seed{seed}")
        best, best_epoch, t0 = {}, 0, time.time()
        for epoch in range(a.epochs):
            model.train()
            loss = loss_f(forward(model)[split["train"]], labels[split["train"]])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if not a.constant_lr:
                sched.step()
            model.eval()
            with torch.no_grad():
                logits = forward(model)
            vmi, vma = scores(logits, split["val"])
            vloss = float(loss_f(logits[split["val"]], labels[split["val"]]))
            stop = stopper.step(
                [("accuracy", vmi, True), ("macro_f1", vma, True)] if a.stop == "metrics" else [("loss", vloss, False)],
                model,
            )
            if stopper.counter == 0:  # this epoch is the new best
                best, best_epoch = {"acc": vmi, "ma": vma}, epoch + 1
            if stop:
                break
        stopper.load_checkpoint(model)
        model.eval()
        with torch.no_grad():
            logits = forward(model)
        tmi, tma = scores(logits, split["test"])
        row = {
            "seed": seed,
            "val_micro": best["acc"],
            "val_macro": best["ma"],
            "test_micro": tmi,
            "test_macro": tma,
            "best_epoch": best_epoch,
            "epochs": epoch + 1,
            "seconds": round(time.time() - t0, 1),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    summarise(a, rows)


if __name__ == "__main__":
    main()
