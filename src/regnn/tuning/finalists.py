"""The finalist stage: the best trials and the configured setting trained again on new seeds, and the choice
between them (the configured setting kept unless a searched one beats it by more than the noise)."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from regnn.errors import ConfigError
from regnn.evaluation import paired


log = logging.getLogger("regnn")
# finalist run i uses seed + FINALIST_SEED_OFFSET + i: seeds that neither the search (seed, seed + 1, ...) nor the
# final runs used, so the finalists' scores carry none of the luck that put them among the finalists
FINALIST_SEED_OFFSET = 1000
DEFAULT_TRIAL = 0  # the configured setting (enqueued first)
# a searched setting replaces the configured one only when its validation gain over it, paired by seed, passes a
# one-sided paired t-test at this level, shared among the searched finalists (Bonferroni: each compared at
# TUNE_ALPHA / their number), so that a tune with several finalists moves away from a setting that is as good as any
# no more often than a tune with one
TUNE_ALPHA = paired.ALPHA


def check_tune(tune: DictConfig) -> None:
    """Refuses tune.* values no tune can run with, in one line."""
    for key, low in (("trials", 0), ("seeds", 1), ("final_runs", 0), ("finalists", 0), ("finalist_seeds", 1)):
        value = tune.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"tune.{key}={value}: a whole number >= {low}")
    folds = tune.get("folds")
    if folds is not None:
        if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
            raise ConfigError(f"tune.folds={folds}: null, or a whole number >= 2")
        for key in ("seeds", "finalist_seeds"):  # every fold validates as often as every other
            if tune[key] % folds:
                raise ConfigError(
                    f"tune.{key}={tune[key]}: a multiple of tune.folds={folds}, so that every fold "
                    f"validates equally often (tune.{key}={folds} trains one run per fold)"
                )
    for key in ("seeds", "final_runs"):  # their seeds must stay below the finalists' (seed + 1000, ...)
        if tune[key] > FINALIST_SEED_OFFSET:
            raise ConfigError(
                f"tune.{key}={tune[key]}: at most {FINALIST_SEED_OFFSET}, so that its seeds stay apart "
                f"from the finalists' (seed + {FINALIST_SEED_OFFSET}, ...)"
            )


def complete_states():
    import optuna

    return optuna.trial.TrialState.COMPLETE


def pick_finalists(scores: dict[int, float], k: int, default: int = DEFAULT_TRIAL) -> list[int]:
    """The k best trials by search score (ties: the lower number first), and `default` after them where it is not
    among them and finished ({trial: score} holds the finished trials)."""
    top = sorted(scores, key=lambda n: (-scores[n], n))[:k]
    return top + [default] if k > 0 and default in scores and default not in top else top


def choice_order(finalists: dict[int, dict]) -> list[int]:
    """The finalists, best first: runs that all finished before any that diverged, then the higher mean validation
    Micro-F1, then the lower trial number (trial 0, the configured setting, wins every tie). A finalist with no
    finished run (mean None) comes last. finalists: {trial: {"mean": float | None, "failed": int, ...}}."""

    def key(n):
        f = finalists[n]
        usable = _scored(f)
        return (not usable, f.get("failed", 0) > 0, -(f["mean"] if usable else 0.0), n)

    return sorted(finalists, key=key)


def _scored(finalist: dict) -> bool:
    """Whether a finalist has a mean validation score (some run finished)."""
    return finalist["mean"] is not None and not math.isnan(finalist["mean"])


def decided_order(finalists: dict[int, dict]) -> list[int]:
    """choice_order with the chosen finalist first (the configured setting where choose keeps it)."""
    order, chosen = choice_order(finalists), choose(finalists)
    return order if chosen is None else [chosen, *(n for n in order if n != chosen)]


def paired_gain(a: dict, b: dict) -> tuple[float, float, int] | None:
    """(mean, standard error, seeds) of finalist a's validation score minus b's over the seeds both finished
    (their "per_seed" scores); None where they share no seed or either lacks per-seed scores."""
    pa, pb = a.get("per_seed"), b.get("per_seed")
    return paired.paired_gain(pa, pb) if pa and pb else None


def required_t(seeds: int, contenders: int) -> float:
    return paired.required_t(seeds, contenders, TUNE_ALPHA)


def beats_default(best: dict, default: dict, contenders: int = 1) -> bool:
    """Whether a searched setting's gain over the configured one on the same seeds exceeds its noise: the mean
    paired difference above required_t(seeds, contenders) standard errors of it, contenders being the searched
    finalists the best was picked from. Without per-seed scores, the higher mean."""
    gain = paired_gain(best, default)
    if gain is None:
        return best["mean"] > default["mean"]
    mean, se, n = gain
    return mean > 0 and mean > required_t(n, contenders) * se


def contenders(finalists: dict[int, dict]) -> int:
    """The searched finalists with a score: the settings the configured one is compared with."""
    return sum(1 for n, f in finalists.items() if n != DEFAULT_TRIAL and _scored(f))


def choose(finalists: dict[int, dict]) -> int | None:
    """The chosen finalist, or None where none finished a run: the first of choice_order, unless the configured
    setting (trial 0) is a finalist whose runs all finished and that one's paired gain over it is within the noise
    (beats_default, with the number of searched finalists): then the configured setting is kept."""
    order = choice_order(finalists)
    if not order or not _scored(finalists[order[0]]):
        return None
    best, default = order[0], finalists.get(DEFAULT_TRIAL)
    if best != DEFAULT_TRIAL and default is not None and _scored(default) and not default.get("failed"):
        if not beats_default(finalists[best], default, contenders(finalists)):
            return DEFAULT_TRIAL
    return best


def finalist_dir(sweep: Path, number: int) -> Path:
    return sweep / f"finalist_trial_{number}"


def read_finalists(sweep: Path, numbers: list[int]) -> dict[int, dict]:
    """{trial: {"mean", "std", "runs", "failed"}} of the finalists whose runs finished (results.json written)."""
    out = {}
    for n in numbers:
        path = finalist_dir(sweep, n) / "results.json"
        if not path.is_file():
            continue
        res = json.loads(path.read_text())
        val = res["metrics"].get("val_micro_f1")  # absent where every run diverged
        out[n] = {
            "mean": val["mean"] if val else None,
            "std": val["std"] if val else None,
            "runs": res["runs"],
            "failed": res.get("failed_runs", 0),
            "per_seed": {
                r["seed"]: r["val_micro_f1"]
                for r in res.get("per_run", [])
                if r.get("val_micro_f1") is not None and "failed" not in r
            },
        }
    return out


def train_finalist(config: DictConfig, sweep: Path, number: int, seed: int, runs: int) -> dict:
    """Trains trial `number`'s setting again, exactly as its trial did (its config.yaml) but with `runs` runs from
    `seed`, in finalist_trial_<number>; a finished one is kept (resume), a partly trained one completed."""
    from regnn.pipeline import train

    source = sweep / f"trial_{number}" / "config.yaml"
    if not source.is_file():
        raise ConfigError(
            f"{source} is missing, so finalist trial {number} cannot be trained again with its setting; "
            "restore that folder, or set hydra.sweep.dir to a new folder for a new study"
        )
    cfg = OmegaConf.load(source)
    with open_dict(cfg):
        cfg.seed, cfg.runs, cfg.resume = seed, runs, True
        for key in ("threads", "workers", "device"):  # how it runs: as this tune says, like its trials
            cfg[key] = config.get(key)
    return train(cfg, finalist_dir(sweep, number))


def finalist_stage(study) -> dict | None:
    """The finalist stage of a study's last tune ({"trials", "seed", "seeds"}), or None where it had none."""
    stage = study.user_attrs.get("finalists")
    return stage if stage and stage.get("trials") else None


def decision(study, sweep: Path) -> tuple[int, str, dict[int, dict]]:
    """(chosen trial, how it was chosen in words, the finalists' scores) for a study whose finalists trained."""
    best = study.best_trial
    seeds = study.user_attrs.get("seeds")
    searched = f"mean validation Micro-F1 {best.value:.2f} over its {seeds} search seed(s)"
    stage = finalist_stage(study)
    if stage is None:
        return best.number, f"trial {best.number}, the search's best ({searched}; no finalist stage)", {}
    scores = read_finalists(sweep, stage["trials"])
    missing = [n for n in stage["trials"] if n not in scores]
    if missing:
        raise ConfigError(
            f"{sweep}: finalist trial(s) {', '.join(map(str, missing))} not trained yet; run the tune "
            "again with the same command to finish them"
        )
    number = choose(scores)
    if number is None:
        log.warning("tune: every finalist run diverged; the search's best trial is chosen")
        return best.number, f"trial {best.number}, the search's best ({searched}; every finalist run diverged)", scores
    f = scores[number]
    how = (
        f"trial {number}, mean validation Micro-F1 {f['mean']:.2f} ± {f['std']:.2f} over {f['runs']} new seeds "
        f"(seeds {stage['seed']}-{stage['seed'] + stage['seeds'] - 1}), the best of {len(scores)} finalists"
    )
    top = choice_order(scores)[0]
    if number == DEFAULT_TRIAL and top != DEFAULT_TRIAL:
        gain, k = paired_gain(scores[top], f), contenders(scores)
        said = (
            f"{gain[0]:+.2f} ± {gain[1]:.2f} (standard error) over {gain[2]} seeds, t = "
            f"{gain[0] / gain[1] if gain[1] else math.inf:.2f} where {required_t(gain[2], k):.2f} was needed"
            if gain
            else "not measured on shared seeds"
        )
        how = (
            f"trial 0, the configured setting, kept: the best finalist, trial {top}, gained {said} (one-sided "
            f"paired t-test at {TUNE_ALPHA:g} over {k} searched finalist{'s' * (k != 1)})"
        )
    return number, how, scores


def run_finalists(config: DictConfig, study, sweep: Path) -> tuple[int, str]:
    """Trains the finalists (tune.finalists > 0) and returns (chosen trial, how it was chosen)."""
    k, runs = int(config.tune.finalists), int(config.tune.finalist_seeds)
    scores = {t.number: t.value for t in study.get_trials(deepcopy=False, states=(complete_states(),))}
    numbers = pick_finalists(scores, k)
    seed = int(config.seed) + FINALIST_SEED_OFFSET
    study.set_user_attr("finalists", {"trials": numbers, "seed": seed, "seeds": runs if numbers else 0})
    for i, n in enumerate(numbers):
        log.info(
            "tune: finalist %d of %d: trial %d (search score %.2f), %d runs from seed %d",
            i + 1,
            len(numbers),
            n,
            scores[n],
            runs,
            seed,
        )
        train_finalist(config, sweep, n, seed, runs)
    number, how, found = decision(study, sweep)
    for n in decided_order(found):
        f = found[n]
        shown = "no finished run" if f["mean"] is None else f"{f['mean']:.2f} ± {f['std']:.2f}"
        log.info(
            "tune: finalist trial %d%s: validation Micro-F1 %s over %d new seeds (search score %.2f)",
            n,
            " (configured setting)" if n == DEFAULT_TRIAL else "",
            shown,
            f["runs"],
            scores[n],
        )
    if found and number == DEFAULT_TRIAL:
        log.info("tune: chosen: %s", how)
    return number, how
