"""Registers regnn's Optuna sweeper with Hydra, which instantiates sweepers only from classes it finds under the
hydra_plugins namespace package (src/hydra_plugins has no __init__.py, so it joins the installed plugins' one)."""

from regnn.tuning import sweeper as _sweeper


class OptunaStudySweeper(_sweeper.OptunaSweeper):
    """hydra/sweeper=optuna_study (conf/hydra/sweeper/optuna_study.yaml); the loop is
    regnn.tuning.sweeper.OptunaSweeper."""
