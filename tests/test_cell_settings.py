"""A cell reads the model's and the trainer's settings from the config once, then passes them to every run."""

import pytest

from conftest import cfg


@pytest.mark.parametrize("model", ["re_gcn", "rgcn"])
def test_a_cell_of_three_runs_reads_its_model_and_trainer_settings_once(tmp_path, monkeypatch, model):
    from regnn import spec
    from regnn.pipeline import train

    calls = {"model": 0, "training": 0}
    model_spec, training_of = spec.ModelSpec.from_config.__func__, spec.training_of

    def counted_model(cls, mcfg):
        calls["model"] += 1
        return model_spec(cls, mcfg)

    def counted_training(c):
        calls["training"] += 1
        return training_of(c)

    monkeypatch.setattr(spec.ModelSpec, "from_config", classmethod(counted_model))
    monkeypatch.setattr("regnn.pipeline.job.training_of", counted_training)
    overrides = ["dataset=synthetic", f"model={model}", "runs=3", "workers=1", "threads=1", "trainer.max_epochs=2"]
    train(cfg(*overrides), tmp_path / "cell")
    assert calls == {"model": 1, "training": 1}
    assert (tmp_path / "cell" / "runs" / "run_02" / "results.json").exists()
