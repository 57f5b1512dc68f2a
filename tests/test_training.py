"""Trainer behaviour on the synthetic graph with a planted relation signal."""

import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score

from conftest import relation, fullbatch

from regnn.data import make_synthetic
from regnn.evaluation.metrics import f1_scores, mean_std
from regnn.models import REGNN, RelationInputs
from regnn.training.device import select_device
from regnn.training.early_stopping import EarlyStopping
from regnn.training.seed import seed_everything
from regnn.training.trainer import train_run


@pytest.fixture(scope="module")
def syn():
    data = make_synthetic(seed=0)
    return data, RelationInputs.build(data)


def run(data, inputs, seed=0, re=True, backbone="gcn", max_epochs=120, patience=40, **kw):
    """lr 0.01 with lambda 10: relation weights move ~0.1 per Adam step, as with the paper's 1e-3 x 100."""
    seed_everything(seed)
    m = REGNN.from_inputs(
        inputs,
        data.in_dims,
        data.num_classes,
        backbone=backbone,
        hidden=16,
        num_layers=3,
        dropout=0.2,
        relation=relation(edge_embeddings=re, self_loop_embeddings=re, scale=10.0),
        **kw,
    )
    return train_run(
        m,
        inputs,
        data.features,
        data.labels,
        data.splits,
        seed=seed,
        options=fullbatch(
            optimizer={"name": "adam", "lr": 0.01, "weight_decay": 1e-3}, max_epochs=max_epochs, patience=patience
        ),
    )


def test_relation_weights_find_the_planted_signal(syn):
    data, inputs = syn
    re, plain = run(data, inputs), run(data, inputs, re=False)
    assert re.metrics["test_micro_f1"] >= 95.0
    assert plain.metrics["test_micro_f1"] <= re.metrics["test_micro_f1"] - 20.0
    first = re.relation_weights[0]
    assert first["source->item"] > 2 * first["noise->item"]  # the trusted relation is weighed up


def test_same_seed_same_result_other_seed_other_result(syn):
    data, inputs = syn
    a, b, c = (
        run(data, inputs, seed=3, max_epochs=15),
        run(data, inputs, seed=3, max_epochs=15),
        run(data, inputs, seed=4, max_epochs=15),
    )
    assert [h["train_loss"] for h in a.history] == [h["train_loss"] for h in b.history]
    assert a.metrics == b.metrics and a.relation_weights == b.relation_weights
    assert [h["train_loss"] for h in a.history] != [h["train_loss"] for h in c.history]


def test_early_stopping_reports_the_best_validation_epoch(syn):
    data, inputs = syn
    r = run(data, inputs, max_epochs=200, patience=10)
    losses = [h["val_loss"] for h in r.history]
    assert r.best_epoch == int(np.argmin(losses))
    assert r.epochs == min(200, r.best_epoch + 1 + 10)  # stopped `patience` epochs after the best
    assert r.metrics["val_loss"] == pytest.approx(losses[r.best_epoch], rel=1e-5)  # best weights restored
    assert r.embeddings.shape == (data.graph.num_nodes("item"), 16)


def test_early_stopping_unit():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

    m, es = M(), EarlyStopping(patience=2, monitor=("val_loss",))
    stops = []
    for epoch, loss in enumerate([3.0, 2.0, 2.5, 1.0, 1.5, 1.2]):
        with torch.no_grad():
            m.w.fill_(epoch)
        stops.append(es.step({"val_loss": loss}, epoch, m))
    assert stops == [False, False, False, False, False, True] and es.best_epoch == 3
    es.restore(m)
    assert m.w.item() == 3.0


def test_early_stopping_on_several_scores_needs_all_to_improve():
    """R-HGNN's released rule: an epoch is the best only when validation accuracy and Macro-F1 both improve."""
    m, es = torch.nn.Linear(1, 1), EarlyStopping(patience=2, monitor=("val_micro_f1", "val_macro_f1"))
    rows = [(50, 40), (55, 39), (56, 45), (57, 45), (58, 44)]  # micro up each epoch; macro up at 0 and 2 only
    stops = [es.step({"val_micro_f1": a, "val_macro_f1": b, "val_loss": 0.0}, e, m) for e, (a, b) in enumerate(rows)]
    assert es.best_epoch == 2 and es.best == {"val_micro_f1": 56, "val_macro_f1": 45}
    assert stops == [False, False, False, False, True]
    with pytest.raises(ValueError, match="can monitor"):
        EarlyStopping(patience=2, monitor=("val_accuracy",))


def test_cosine_schedule_anneals_to_a_hundredth(syn):
    """trainer.lr_schedule=cosine: R-HGNN's CosineAnnealingLR from lr to lr/100 over max_epochs."""
    from regnn.training.trainer import make_schedule

    opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.01)
    sched = make_schedule(opt, "cosine", 10)
    lrs = []
    for _ in range(10):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs[4] == pytest.approx(0.0001 + (0.01 - 0.0001) / 2) and lrs[-1] == pytest.approx(0.0001)
    assert make_schedule(opt, "constant", 10) is None
    data, inputs = syn
    seed_everything(0)
    m = REGNN.from_inputs(
        inputs, data.in_dims, data.num_classes, backbone="gcn", hidden=8, num_layers=2, relation=relation()
    )
    r = train_run(
        m,
        inputs,
        data.features,
        data.labels,
        data.splits,
        seed=0,
        options=fullbatch(
            max_epochs=5,
            patience=10,
            optimizer={"name": "adam", "lr": 0.01, "weight_decay": 0.0},
            lr_schedule="cosine",
            stop_on=("val_micro_f1", "val_macro_f1"),
        ),
    )
    assert r.epochs == 5 and 0 <= r.best_epoch < 5


def test_onecycle_schedule_is_hgbs():
    """trainer.lr_schedule=onecycle: HGB's HGT schedule, from lr/25 up to lr at 5% of max_epochs, then down to
    lr/25e4 for the last epoch, with AdamW (optimizer=adamw)."""
    from regnn.training.trainer import make_optimizer, make_schedule

    opt = make_optimizer([torch.nn.Parameter(torch.zeros(1))], name="adamw", lr=1e-3, weight_decay=1e-4)
    assert isinstance(opt, torch.optim.AdamW) and opt.param_groups[0]["weight_decay"] == 1e-4
    sched = make_schedule(opt, "onecycle", 300)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(300):  # one step per epoch, as train_run steps it
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs[0] == pytest.approx(1e-3 / 25) and max(lrs) == pytest.approx(1e-3)
    assert lrs.index(max(lrs)) == 14 and lrs[299] == pytest.approx(1e-3 / 25e4)  # the last epoch trains at it


def test_f1_matches_sklearn():
    g = torch.Generator().manual_seed(0)
    for c in (2, 3, 7):
        y = torch.randint(0, c, (500,), generator=g)
        logits = torch.randn(500, c, generator=g)
        logits[torch.arange(250), y[:250]] += 3  # half right
        got = f1_scores(logits, y, c)
        pred = logits.argmax(1).numpy()
        assert got["micro_f1"] == pytest.approx(100 * f1_score(y.numpy(), pred, average="micro"))
        assert got["macro_f1"] == pytest.approx(100 * f1_score(y.numpy(), pred, average="macro"))
    y = torch.tensor([0, 0, 1, 1])  # class 2 neither present nor predicted: left out, as sklearn does
    logits = torch.eye(3)[[0, 1, 1, 1]]
    assert f1_scores(logits, y, 3)["macro_f1"] == pytest.approx(100 * f1_score(y, [0, 1, 1, 1], average="macro"))


def test_mean_std_is_population_std():
    assert mean_std([1.0, 3.0]) == {"mean": 2.0, "std": 1.0, "n": 2}


def test_device_selection_explains_cpu_fallback():
    dev, why = select_device("auto")
    if not torch.cuda.is_available():
        assert dev.type == "cpu" and "no CUDA device" in why
        with pytest.raises(ValueError, match="device=cuda requested but torch sees no CUDA device"):
            select_device("cuda")
    assert select_device("cpu")[0].type == "cpu"


@pytest.mark.parametrize("backbone", ["gcn", "gat"])
def test_bf16_precision_trains_and_keeps_sparse_parts_in_float32(syn, backbone):
    """precision=bf16: dense layers in bfloat16, aggregation/attention/loss in float32; it must still learn the
    planted signal, and outputs handed back (logits, embeddings, relation weights) are float32."""
    data, inputs = syn
    seed_everything(0)
    m = REGNN.from_inputs(
        inputs,
        data.in_dims,
        data.num_classes,
        backbone=backbone,
        hidden=16,
        num_layers=3,
        dropout=0.2,
        relation=relation(scale=10.0),
    )
    r = train_run(
        m,
        inputs,
        data.features,
        data.labels,
        data.splits,
        seed=0,
        options=fullbatch(
            optimizer={"name": "adam", "lr": 0.01, "weight_decay": 1e-3}, max_epochs=120, patience=40, precision="bf16"
        ),
    )
    if backbone == "gcn":  # RE-GCN solves this graph in fp32 (test above); GAT needs more than 120 epochs
        assert r.metrics["test_micro_f1"] >= 95.0
    assert r.history[-1]["train_loss"] < 0.8 * r.history[0]["train_loss"]
    assert r.embeddings.dtype == np.float32 or r.embeddings.dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in m.parameters())  # autocast never casts the weights
    with pytest.raises(ValueError, match="fp32 or bf16"):
        train_run(
            m,
            inputs,
            data.features,
            data.labels,
            data.splits,
            seed=0,
            options=fullbatch(optimizer={"name": "adam"}, max_epochs=1, precision="fp16"),
        )


def test_epochs_generator_is_the_trainers_loop(syn):
    """train_run's history is the epochs() generator's rows: stepping a model by hand (as the paired benchmark
    does) trains it exactly as train_run would."""
    from regnn.training.trainer import epochs

    data, inputs = syn
    ref = run(data, inputs, max_epochs=6, patience=100)
    seed_everything(0)
    m = REGNN.from_inputs(
        inputs,
        data.in_dims,
        data.num_classes,
        backbone="gcn",
        hidden=16,
        num_layers=3,
        dropout=0.2,
        relation=relation(scale=10.0),
    )
    steps = epochs(
        m,
        inputs,
        data.features,
        data.labels,
        data.splits,
        fullbatch(optimizer={"name": "adam", "lr": 0.01, "weight_decay": 1e-3}),
    )
    rows = [next(steps) for _ in range(6)]
    assert [r["epoch"] for r in rows] == list(range(6))
    assert [r["val_loss"] for r in rows] == [h["val_loss"] for h in ref.history]
    assert [r["train_loss"] for r in rows] == [h["train_loss"] for h in ref.history]


@pytest.mark.parametrize(
    "opt",
    [
        {"name": "adam", "lr": 0.01, "weight_decay": 1e-3},
        {"name": "sgd", "lr": 0.05, "weight_decay": 1e-3, "momentum": 0.9},
    ],
)
def test_multi_tensor_optimizer_steps_equal_the_per_tensor_ones(syn, opt):
    """make_optimizer updates every parameter in one multi-tensor op (foreach): 30 training steps of RE-GCN give
    bitwise the parameters of torch's per-tensor loop (the committed results were trained with that loop)."""
    import torch.nn.functional as F

    from regnn.training.trainer import make_optimizer

    data, inputs = syn
    params = []
    for foreach in (True, False):
        seed_everything(0)
        m = REGNN.from_inputs(
            inputs, data.in_dims, data.num_classes, hidden=16, num_layers=3, dropout=0.2, relation=relation(scale=10.0)
        )
        start = [p.detach().clone() for p in m.parameters()]
        o = make_optimizer(m.parameters(), **opt)
        assert all(g["foreach"] for g in o.param_groups)
        if not foreach:
            for g in o.param_groups:
                g["foreach"] = False
        for _ in range(30):
            logits, _ = m(inputs, data.features)
            idx = data.splits["train"]
            o.zero_grad()
            F.cross_entropy(logits[idx], data.labels[idx]).backward()
            o.step()
        params.append([p.detach().clone() for p in m.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*params))
    assert all(not torch.equal(a, b) for a, b in zip(params[0], start))  # every parameter moved


# -- the epoch loop (regnn.training.loop) on a step that returns given rows ------------------------------------
def _rows(losses):
    return [
        {"epoch": e, "train_loss": 1.0, "val_loss": v, "val_micro_f1": 50.0, "val_macro_f1": 50.0}
        for e, v in enumerate(losses)
    ]


def test_the_loop_stops_after_patience_epochs_and_keeps_the_first_best():
    from regnn.training.early_stopping import StopRule
    from regnn.training.loop import EpochLoop

    model = torch.nn.Linear(2, 2)
    rows = _rows([1.0, 0.5, 0.5, 0.7, 0.6, 0.4])

    def step(epoch):
        with torch.no_grad():
            model.weight.fill_(epoch)  # the weights say which epoch they come from
        return dict(rows[epoch])

    loop = EpochLoop(model, StopRule(max_epochs=6, patience=3, stop_on=("val_loss",)), num_classes=2)
    history = loop.run(step)
    assert [r["epoch"] for r in history] == [0, 1, 2, 3, 4]  # epochs 2-4 do not beat 0.5: stopped after 4
    assert loop.best_epoch == 1  # a tie is no improvement: the first epoch with the best loss
    loop.restore()
    assert float(model.weight[0, 0]) == 1.0


def test_without_early_stopping_the_loop_trains_every_epoch_and_keeps_the_last():
    from regnn.training.early_stopping import StopRule
    from regnn.training.loop import EpochLoop

    model = torch.nn.Linear(2, 2)
    seen = []
    loop = EpochLoop(
        model, StopRule(max_epochs=4, patience=0, stop_on=()), num_classes=2, check_losses=False, on_epoch=seen.append
    )
    history = loop.run(lambda epoch: {"epoch": epoch, "train_loss": 4.0 - epoch})  # no validation scores
    assert len(history) == 4 and seen == history and loop.best_epoch == 3
    state = loop.state()
    again = EpochLoop(model, StopRule(max_epochs=4, patience=0, stop_on=()), num_classes=2, check_losses=False)
    again.load_state(state)  # a checkpoint of a loop without early stopping reads back
    assert again.epoch == 4 and again.best_epoch == 3
