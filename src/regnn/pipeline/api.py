"""train.py and predict.py from Python (a notebook, a script of one's own): the same configs, composed with Hydra's
compose API, trained by the same pipeline, and the results as Python objects instead of files.

    import regnn
    out = regnn.run(["dataset=custom", "dataset.path=/data/shops", "model=re_gcn", "runs=3"])
    out.summary["metrics"]["test_micro_f1"]     # {"mean": ..., "std": ...} over the cell's runs
    out.run_dir                                 # results.json, runs/run_XX/model.pt, ... as train.py writes them
    out.predictions()                           # DataFrame as predictions.csv, indexed by the graph's own ids
    out.scores                                  # the predicting run's Micro-/Macro-F1 per split
    out.embeddings(), out.relation_weights(), out.model()
    regnn.predict(out.run_dir, ensemble=True)   # the same for an earlier cell (predict.py's options)

predictions() and the rest are computed once, on first use, by predict.py's own code (regnn.pipeline.predict):
the cell's best run on validation (or every run, ensemble=True), checked as predict.py checks it; nothing is
written.

One cell per call (a sweep is train.py -m). The run folder is `run_dir=`, else conf/hydra's default under
outputs/; the log goes to its train.log and, where nothing else shows regnn's log, to the notebook.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from regnn.paths import REPO_ROOT


PREDICT_OPTIONS = (
    *("ensemble", "embeddings", "dataset_path", "inference", "check_scores", "allow_missing", "device", "explain"),
    "changed_graph",
)


class Trained:
    """A trained cell: its summary (results.json), folder and config, and its predictions as Python objects."""

    def __init__(self, summary: dict | None, run_dir: Path, config=None, **options):
        unknown = sorted(set(options) - set(PREDICT_OPTIONS) - {"threads"})
        if unknown:
            raise TypeError(f"unknown option(s) {unknown}; predict takes {list(PREDICT_OPTIONS)}")
        from regnn.pipeline.predict_guard import non_boolean

        if bad := non_boolean(options, none_ok=False):
            raise TypeError(f"{bad} must be True or False (a string such as 'false' would be true)")
        self.summary, self.run_dir, self.config = summary, Path(run_dir), config
        self.options, self._done = options, None

    def _predicted(self):
        if self._done is None:
            from omegaconf import OmegaConf

            from regnn.pipeline.predict import predicted

            base = OmegaConf.load(REPO_ROOT / "conf" / "predict.yaml")
            keys = {k: v for k, v in OmegaConf.to_container(base).items() if k not in ("defaults", "hydra")}
            self._done = predicted(OmegaConf.create({**keys, **self.options, "run": str(self.run_dir)}))
        return self._done

    @property
    def scores(self) -> dict:
        """Micro- and Macro-F1 per split of the predictions (the chosen run's, or the ensemble's)."""
        r = self._predicted().result
        return r.get("ensemble") or next(iter(r["runs"].values()))

    def predictions(self):
        """predictions.csv as a DataFrame indexed by node (the graph's own ids where it has them)."""
        from regnn.pipeline.predict import predictions_frame

        p = self._predicted()
        return predictions_frame(p.data, p.probs, p.shares, p.aligned, p.reasons).set_index("node")

    def embeddings(self):
        """Every target node's representation (a DataFrame indexed as predictions()), None for models without."""
        import pandas as pd

        p = self._predicted()
        if p.emb is None:
            return None
        return pd.DataFrame(p.emb.numpy(), index=self.predictions().index)

    def relation_weights(self):
        """One row per run, layer and relation (self:<type>: a node type's self-loop), its source and destination
        node types, and the learned weight (a list where the layer has several heads)."""
        from regnn.pipeline.predict import weight_frame

        return weight_frame(self._predicted())

    def model(self):
        """The chosen run's trained module, loaded and checked as predict.py loads it (eval mode)."""
        from regnn.pipeline.trained_model import loaded_model

        p = self._predicted()
        return loaded_model(p.job, p.tcfg, p.chosen.runs[0], str(self.options.get("inference", "auto")))[0]

    def model_inputs(self) -> tuple:
        """What model() is called with: model(*out.model_inputs()) gives (class scores of every target node, their
        representations); scores as predict.py computes them on the whole graph."""
        p = self._predicted()
        return p.job.inputs, p.job.feats


def predict(run_dir: str | Path, **options) -> Trained:
    """An earlier cell (or one of its runs) as regnn.run returns a new one; options as predict.py's
    (ensemble=True, dataset_path=..., inference=..., check_scores=False, allow_missing=True, device=...,
    explain=True: predictions() then holds each relation's share per node and the top relation)."""
    return Trained(None, Path(run_dir).resolve(), None, **options)


def explain(run_dir: str | Path, ablation: str = "masked", retrain_dir: str | Path | None = None, **options):
    """explain.py's tables for a cell, as regnn.pipeline.explain.Explained (weights, ablation, agreement: pandas
    DataFrames), nothing written but the retrained cells (ablation="retrain": under retrain_dir, default
    outputs/ablation/<graph>/<model>/<cell folder>). options: inference, device, threads, check_scores,
    allow_missing, as explain.py's."""
    from omegaconf import OmegaConf

    from regnn.pipeline.explain import explain as explained
    from regnn.runs.listing import trained_name

    cell = Path(run_dir).resolve()
    if retrain_dir is None:
        retrain_dir = REPO_ROOT / "outputs" / "ablation" / trained_name(cell) / cell.name
    defaults = {"inference": "auto", "device": "auto", "threads": None, "check_scores": True, "allow_missing": False}
    cfg = {"run": str(cell), "ablation": ablation, "retrain_dir": str(retrain_dir)} | defaults | options
    return explained(OmegaConf.create(cfg))


def compose(overrides=()):
    """The config train.py would run with these overrides (Hydra's compose API), its hydra node included."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    import regnn.config  # noqa: F401  (the resolvers conf/ uses)
    from regnn.errors import ConfigError

    if isinstance(overrides, (str, bytes)):
        raise TypeError(f"overrides must be a list of strings, as on the command line: [{overrides!r}], not a string")
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3", job_name="train"):
        try:
            return hydra_compose("train", overrides=list(overrides), return_hydra_config=True)
        except Exception as e:  # noqa: BLE001  (Hydra's composition and override errors, several lines each)
            if type(e).__module__.split(".")[0] not in ("hydra", "omegaconf"):
                raise
            first = next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
            raise ConfigError(f"{first} (overrides {list(overrides)}; docs/configuration.md lists the keys)") from None


def run(overrides=(), run_dir: str | Path | None = None) -> Trained:
    """Trains the cell train.py would train with `overrides` into run_dir; returns its summary and folder."""
    from omegaconf import OmegaConf, open_dict

    from regnn.pipeline import train

    cfg = compose(overrides)
    out = Path(run_dir if run_dir is not None else cfg.hydra.run.dir).resolve()
    with open_dict(cfg):
        del cfg["hydra"]
    OmegaConf.resolve(cfg)
    out.mkdir(parents=True, exist_ok=True)
    log = logging.getLogger("regnn")
    handlers = [logging.FileHandler(out / "train.log")]
    if not log.handlers and not logging.getLogger().handlers:
        handlers.append(logging.StreamHandler(sys.stderr))
    level = log.level
    for h in handlers:
        h.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
        log.addHandler(h)
    log.setLevel(logging.INFO)
    try:
        summary = train(cfg, out)
    finally:
        for h in handlers:
            log.removeHandler(h)
            h.close()
        log.setLevel(level)
    return Trained(summary, out, cfg)
