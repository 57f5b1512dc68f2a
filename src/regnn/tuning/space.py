"""The search space of a tune: Hydra's sweep overrides (hydra.sweeper.params, then the command line's) as Optuna
distributions, and the override a trial's value is launched with.

    interval(a, b)             FloatDistribution(a, b)            (Hydra's intervals are real-valued: a <= x <= b)
    tag(log, interval(a, b))   FloatDistribution(a, b, log=True)
    range(a, b, s)             IntDistribution(first, last, step=|s|), the values Hydra's range lists (b excluded);
                               with a float start, stop or step: FloatDistribution(first, last, step=|s|)
    tag(log, range(a, b))      IntDistribution(first, last, log=True)   (step 1 only, as Optuna requires)
    choice(x, y, ...) or x,y   CategoricalDistribution((x, y, ...))     (plain values: str, int, float, bool)

A later override for the same key wins; a plain value fixes the key and removes it from the search.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep

from regnn.errors import ConfigError

_TAGS = {"log"}


def _parser() -> OverridesParser:
    return OverridesParser.create()


def _parse(line: str) -> Override:
    try:
        return _parser().parse_override(line)
    except Exception as e:  # noqa: BLE001 (Hydra's grammar errors: one line naming the override)
        raise ConfigError(f"{line!r} is no override Hydra can parse: {e}") from None


def distribution(override: Override):
    """The Optuna distribution of one sweep override (see the module docstring for the grammar)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    line, sweep = override.input_line, override.value()
    tags = set(getattr(sweep, "tags", ()) or ())
    if tags - _TAGS:
        raise ConfigError(f"{line}: unknown tag {', '.join(sorted(tags - _TAGS))}; the sweeper knows tag(log, ...)")
    log_scale = "log" in tags
    if getattr(sweep, "shuffle", False):
        raise ConfigError(f"{line}: shuffle() means nothing to a search; give the values with choice() or range()")
    try:
        if isinstance(sweep, IntervalSweep):
            return FloatDistribution(float(sweep.start), float(sweep.end), log=log_scale)
        if isinstance(sweep, RangeSweep):
            values = list(override.sweep_iterator())
            if not values:
                raise ConfigError(f"{line}: an empty range")
            step = abs(sweep.step)
            if all(isinstance(v, int) for v in values) and isinstance(step, int):
                if log_scale and step != 1:
                    raise ConfigError(f"{line}: a log-scaled range needs step 1 (Optuna's rule)")
                return IntDistribution(min(values), max(values), log=log_scale, step=step)
            if log_scale:
                raise ConfigError(f"{line}: a log-scaled range of floats; use tag(log, interval(a, b))")
            return FloatDistribution(float(min(values)), float(max(values)), step=float(step))
        if isinstance(sweep, ChoiceSweep):
            if log_scale:
                raise ConfigError(f"{line}: tag(log, ...) applies to interval() and range(), not to choice()")
            bad = [v for v in sweep.list if not isinstance(v, (str, int, float, bool))]
            if bad:
                raise ConfigError(f"{line}: choices must be plain values (str, int, float, bool), not {bad[0]!r}")
            return CategoricalDistribution(list(sweep.list))
    except ValueError as e:  # Optuna's checks of the bounds (low > high, log with low <= 0, ...)
        raise ConfigError(f"{line}: {e}") from None
    raise ConfigError(f"{line}: {type(sweep).__name__} cannot be searched; use interval(), range() or choice()")


def search_space(params: Mapping[str, Any] | None, arguments: Sequence[str]) -> tuple[dict, list[str]]:
    """({parameter: distribution}, [fixed override lines]) from hydra.sweeper.params and then the command line.

    A key's last override wins (keys compare without Hydra's +/++/~ prefixes); searched keys keep the position of
    their first mention, which fixes the order in which the sampler draws them. Nested params are flattened:
    `hydra.sweeper.params.model.hidden='choice(16,32)'` makes {model: {hidden: ...}}, the key model.hidden."""
    lines = [f"{k}={v}" for k, v in _flat(params or {})] + list(arguments)
    entries: dict[str, tuple[str, Any]] = {}  # bare key -> (parameter name | None, distribution | fixed line)
    for line in lines:
        o = _parse(line)
        name = o.get_key_element()
        bare = name.lstrip("+~")
        if o.is_sweep_override():
            entries[bare] = (name, distribution(o))
        else:
            entries.pop(bare, None)  # a fixed key goes after every searched one, in command-line order
            entries[bare] = (None, o.input_line)
    space = {name: d for name, d in entries.values() if name is not None}
    fixed = [line for name, line in entries.values() if name is None]
    return space, fixed


def _flat(params: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for k, v in params.items():
        if isinstance(v, Mapping):
            out += _flat(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out


def override_value(value: Any) -> str:
    """`value` as the right-hand side of a Hydra override that parses back to it (strings quoted where needed)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if not isinstance(value, str):
        raise ConfigError(f"{value!r}: the sweeper passes plain values only (str, int, float, bool)")
    for text in (
        value,
        "'" + re.sub(r"(\\*)('|$)", lambda m: m.group(1) * 2 + ("\\'" if m.group(2) else ""), value) + "'",
    ):
        try:
            o = _parser().parse_override(f"k={text}")
        except Exception:  # noqa: BLE001 (not this spelling; try the quoted one)
            continue
        if not o.is_sweep_override() and o.value() == value and isinstance(o.value(), str):
            return text
    raise ConfigError(f"{value!r} cannot be written as a Hydra override value")


def matching(dist, value: Any) -> tuple[bool, Any]:
    """(True, the value as `dist` holds it) where `value` lies in the distribution, else (False, None): where an
    enqueued setting may start a study."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if isinstance(dist, CategoricalDistribution):
        for c in dist.choices:  # 64 is choice 64 (and 64.0), but True is not 1 and "64" is not 64
            if (
                c == value
                and isinstance(c, bool) == isinstance(value, bool)
                and isinstance(c, str) == isinstance(value, str)
            ):
                return True, c
        return False, None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False, None
    if isinstance(dist, IntDistribution):
        if float(value).is_integer() and dist.low <= value <= dist.high and (int(value) - dist.low) % dist.step == 0:
            return True, int(value)
        return False, None
    if isinstance(dist, FloatDistribution) and dist.low <= value <= dist.high:
        if dist.step is None or abs((value - dist.low) / dist.step - round((value - dist.low) / dist.step)) < 1e-8:
            return True, float(value)
    return False, None
