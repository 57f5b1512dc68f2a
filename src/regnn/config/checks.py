"""The value checks every config check uses: a plain-language error naming the key, the value and the rule,
and the upper bounds past which a value is a typo or a unit slip."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from regnn.errors import ConfigError, quote

# upper bounds: a value past these is a typo or a unit slip, and would fail deep inside (an allocation of
# petabytes, a seed numpy cannot take, a loop that never ends) after the run folder was written
MAX_RUNS = 1000
MAX_SEED = 2**31 - 1  # numpy's and torch's seeding both take it; run i uses seed + i
MAX_THREADS = 1024
MAX_WIDTH = 65536  # model.hidden and the like: a (width x width) weight of 16 GB in float32
MAX_HEADS = 64
MAX_LAYERS = 64
MAX_EPOCHS = 1_000_000  # trainer.max_epochs and patience
MAX_LR = 1e4  # optimizer.lr and weight_decay: far past any setting that trains (a run diverges long before)
MAX_SCALE = 1e6  # lambda (model.relation.scale); the paper sweeps 1e-3 to 1e3


def check(ok: bool, key: str, value, rule: str) -> None:
    if not ok:
        raise ConfigError(f"{key}={quote(value)} is not valid: {rule}")


def number(cfg, key, lo=None, hi=None, integer=False, lo_open=False, hi_open=False):
    v = OmegaConf.select(cfg, key)
    kind = int if integer else (int, float)
    check(
        isinstance(v, kind) and not isinstance(v, bool), key, v, "must be " + ("an integer" if integer else "a number")
    )
    if lo is not None:
        check(v > lo if lo_open else v >= lo, key, v, f"must be {'>' if lo_open else '>='} {lo}")
    if hi is not None:
        check(v < hi if hi_open else v <= hi, key, v, f"must be {'<' if hi_open else '<='} {hi}")


def stop_on(t: DictConfig, known: list[str]) -> None:
    """trainer.stop_on: a list of one or more of the trainer's known monitors."""
    stop = OmegaConf.to_container(t.stop_on) if OmegaConf.is_list(t.stop_on) else t.stop_on
    check(
        isinstance(stop, list) and stop and all(m in known for m in stop),
        "trainer.stop_on",
        stop,
        f"must be a list of one or more of {known} (each must improve for an epoch to count as the best)",
    )
