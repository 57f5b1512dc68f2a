"""A train.py invocation as data: what experiment=compare's tuned cells and a tune's final runs start in a
subprocess (a Hydra sweep cannot run inside another one), built from one typed request instead of override strings
formatted where they are used. `TrainRequest.argv()` is the command line, `TrainRequest.from_argv` reads one back
(tests round-trip them), and `kept_overrides` is the one filter that decides which of the user's overrides the
new process inherits.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path


def override_key(o: str) -> str:
    """The key of a Hydra override, without its +/++/~ prefix: "+a.b=1" -> "a.b"."""
    return o.lstrip("+~").split("=", 1)[0]


def kept_overrides(overrides, own: tuple[str, ...] = (), keys: set[str] = frozenset()) -> tuple[str, ...]:
    """The overrides a new process inherits: all but those whose key is in `keys` or starts with one of `own`
    (a key, "tune." for a group of keys, or "experiment")."""
    return tuple(
        o for o in overrides if override_key(o) not in keys and not any(_under(override_key(o), p) for p in own)
    )


def _under(key: str, prefix: str) -> bool:
    return key == prefix.rstrip(".") or (prefix.endswith(".") and key.startswith(prefix))


@dataclass(frozen=True)
class TrainRequest:
    """One train.py command: the user's overrides it inherits, then what the caller sets."""

    overrides: tuple[str, ...] = ()  # inherited, in order
    settings: dict = field(default_factory=dict)  # key -> value the caller sets (runs, tune.trials, ...)
    out_dir: Path | None = None  # hydra.run.dir, or with multirun hydra.sweep.dir
    config_dir: Path | None = None  # an extra config folder (a tune's sweep, which holds tuned/best.yaml)
    tuned: str | None = None  # tuned=<name> from config_dir
    experiment: str | None = None
    multirun: bool = False

    def argv(self) -> list[str]:
        out = ["-m"] if self.multirun else []
        out += ["--config-dir", str(self.config_dir)] if self.config_dir is not None else []
        out += [f"experiment={self.experiment}"] if self.experiment else []
        out += [f"tuned={self.tuned}"] if self.tuned else []
        out += list(self.overrides)
        out += [f"{k}={_text(v)}" for k, v in self.settings.items()]
        if self.out_dir is not None:
            out.append(f"hydra.{'sweep' if self.multirun else 'run'}.dir={self.out_dir}")
        return out

    def command(self, train_py: Path) -> list[str]:
        return [sys.executable, str(train_py), *self.argv()]

    @classmethod
    def from_argv(cls, argv: list[str], settings: tuple[str, ...] = ()) -> TrainRequest:
        """The request whose argv() is `argv`; `settings`: the keys that were set by the caller, not inherited."""
        argv, kw, overrides, set_ = list(argv), {}, [], {}
        if argv[:1] == ["-m"]:
            kw["multirun"], argv = True, argv[1:]
        if argv[:1] == ["--config-dir"]:
            kw["config_dir"], argv = Path(argv[1]), argv[2:]
        for a in argv:
            key, _, value = a.partition("=")
            if key in ("experiment", "tuned") and key not in kw and not overrides:
                kw[key] = value
            elif key in ("hydra.run.dir", "hydra.sweep.dir"):
                kw["out_dir"] = Path(value)
            elif key in settings:
                set_[key] = _value(value)
            else:
                overrides.append(a)
        return cls(overrides=tuple(overrides), settings=set_, **kw)


def _text(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _value(s: str):
    if s in ("true", "false"):
        return s == "true"
    try:
        return int(s)
    except ValueError:
        return s
