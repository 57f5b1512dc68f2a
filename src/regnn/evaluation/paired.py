"""Whether one model's or setting's lead over another is more than the spread of their runs: a one-sided paired
t-test over the seeds both ran. The tune keeps its configured setting unless a searched one beats it this way
(regnn.tuning.finalists), and experiment=compare says whether its winner's lead over the runner-up passes it."""

from __future__ import annotations

import math

ALPHA = 0.05  # one-sided level, shared among the contenders (Bonferroni)


def paired_gain(a: dict, b: dict) -> tuple[float, float, int] | None:
    """(mean, standard error, seeds) of a's score minus b's over the seeds both have ({seed: score} each); None
    where they share no seed."""
    d = [a[s] - b[s] for s in a if s in b]
    if not d:
        return None
    mean = sum(d) / len(d)
    se = math.inf if len(d) < 2 else math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
    return mean, se, len(d)


def required_t(seeds: int, contenders: int = 1, alpha: float = ALPHA) -> float:
    """The t statistic a paired gain over `seeds` seeds must exceed: Student's t quantile at 1 - alpha /
    contenders with seeds - 1 degrees of freedom (infinite for one seed: no noise estimate, no evidence)."""
    if seeds < 2:
        return math.inf
    from scipy.stats import t

    return float(t.ppf(1 - alpha / max(1, contenders), seeds - 1))


def beyond_noise(gain: tuple[float, float, int] | None, contenders: int = 1) -> bool:
    """Whether a paired gain is positive and above required_t standard errors of it."""
    if gain is None:
        return False
    mean, se, n = gain
    return mean > 0 and mean > required_t(n, contenders) * se
