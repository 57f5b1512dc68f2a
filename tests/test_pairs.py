"""Every model x trainer pair either trains or is refused at validation, in one line that names the reason and
the fix, before the job writes anything."""

import pytest
from hydra import compose, initialize_config_dir

from conftest import REPO, run_train
from regnn.errors import ConfigError
from regnn.pipeline import check, train

MODELS = sorted(p.stem for p in (REPO / "conf" / "model").glob("*.yaml"))
TINY_MINIBATCH = [
    "trainer=minibatch",
    "trainer.batch_size=100",
    "trainer.max_epochs=1",
    "trainer.patience=1",
    "trainer.max_batches=1",
    "trainer.log_every=0",
]


def compose_minibatch(model: str):
    """model under trainer=minibatch on the synthetic graph, one fanout per model layer."""
    base = ["dataset=synthetic", f"model={model}", "runs=1", "threads=1", "workers=1", *TINY_MINIBATCH]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        layers = int(compose("train", overrides=base).model.get("num_layers", 2))
        return compose("train", overrides=[*base, f"trainer.fanouts=[{','.join(['3'] * layers)}]"])


# of the models in conf/model/, the ones the mini-batch trainer serves (docs/scale.md); the RE backbones are
# tested under it elsewhere (tests/test_minibatch.py). A model that starts or stops training there fails here.
MINIBATCH = {"mlp"}


@pytest.mark.parametrize("model", MODELS)
def test_every_model_trains_under_minibatch_or_is_refused_in_one_line(model, tmp_path):
    cfg = compose_minibatch(model)
    try:
        check(cfg)
    except ConfigError as e:
        assert model not in MINIBATCH, f"{model} trains under trainer=minibatch but was refused: {e}"
        msg = str(e)
        assert "\n" not in msg and " is not valid: " in msg and "trainer=" in msg, msg
        with pytest.raises(ConfigError, match="is not valid"):
            train(cfg, tmp_path / "cell")
        assert not (tmp_path / "cell").exists()  # refused before the cell's directory was made
        return
    assert model in MINIBATCH, f"{model} is refused under trainer=minibatch (docs/scale.md) but was accepted"
    summary = train(cfg, tmp_path / "cell")
    assert summary["trainer"] == "minibatch" and summary["finished_runs"] == 1
    assert (tmp_path / "cell" / "results.json").is_file()


@pytest.mark.parametrize(
    "model,message",
    [
        ("rgcn", "model.arch='rgcn' is not valid: trainer=minibatch trains the RE-GNN stacks only"),
        ("re_gin", "model.backbone='gin' is not valid: trainer=minibatch runs gcn, gat, sage, mlp layers"),
        ("re_gatv2", "model.backbone='gatv2' is not valid"),
        ("gcn_m", "model.arch='metapath_gnn' is not valid"),
    ],
)
def test_refusals_name_the_setting_and_the_fix(model, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as e:
        check(compose_minibatch(model))
    assert "trainer=fullbatch" in str(e.value) or "use a gat model" in str(e.value)


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            ["model=rgcn"],
            "model.arch='rgcn' is not valid: trainer=minibatch trains the RE-GNN stacks only, not the "
            "heterogeneous baseline rgcn: train it with trainer=fullbatch",
        ),
        (
            ["model=re_gat", "model.layout=authors"],  # the authors' full-batch attention stack
            "model.layout='authors' is not valid: the authors' attention stack applies its last layer twice",
        ),
    ],
)
def test_train_py_refuses_a_pair_in_one_line_and_writes_nothing(tmp_path, overrides, message):
    out = tmp_path / "run"
    p = run_train("dataset=synthetic", "trainer=minibatch", *overrides, f"hydra.run.dir={out}")
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr
    assert not out.exists()  # a refused command leaves no run folder, not even Hydra's files
