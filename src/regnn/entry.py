"""What train.py does around Hydra: one line and exit 2 for what the user can fix, whether Hydra or regnn finds it.

Hydra reports its own failures (a misspelt key, an unknown option, a run folder it cannot create) itself, in
several lines, with exit 1 and, for a misspelt key, the hint to append it with `+`, which regnn's validation then
refuses. Here Hydra raises them instead (HYDRA_FULL_ERROR) and `run` turns each into one line with the fix.
Errors in regnn's own code still end in a traceback: those are bugs to report.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path

from regnn.paths import REPO_ROOT
from regnn.runtime.interrupt import Interrupted


HYDRA_FILES = {
    ".hydra",
    "train.log",
    "predict.log",
    "explain.log",
}  # what Hydra writes into a run folder before our code runs


def _did_you_mean(head: str, options: list[str]) -> str:
    """ "did you mean 're_gcn'? " for "Could not find 'model/re_gcnn'" ("" where nothing is close)."""
    import difflib

    asked = head.split("'")[1].rsplit("/", 1)[-1] if head.count("'") >= 2 else ""
    close = difflib.get_close_matches(asked, options, n=1, cutoff=0.6) if asked else []
    return f"did you mean {close[0]!r}? " if close else ""


def _hydra_line(e: Exception) -> str | None:
    """One line for a Hydra composition or override error, or None for another exception."""
    from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(e, MissingConfigException):
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        # the options, then (where Hydra adds it) the config search path, which is no option
        ends = [i for i, ln in enumerate(lines) if ln.startswith("Config search path")]
        options = [ln for ln in lines[2 : ends[0] if ends else None] if not ln.startswith("Available")]
        head = lines[0].split(": ", 1)[-1] if lines else "a config option was not found"
        return f"{head}; {_did_you_mean(head, options)}available: {', '.join(options)}" if options else head
    if isinstance(e, ConfigCompositionException):
        first = str(e).splitlines()[0].rstrip(".")
        cause = e.__cause__
        if (
            "Could not override" in first
            and isinstance(cause, OmegaConfBaseException)
            and "not in struct" in str(cause)
        ):
            key = first.split("'")[1] if "'" in first else "the key"
            return (
                f"{first}: {key} is not a key of this config; check its spelling (python train.py --cfg job "
                "prints every key; there is nothing to add with +)"
            )
        return first + (f" ({str(cause).splitlines()[0]})" if cause is not None else "")
    if isinstance(e, OverrideParseException):
        return f"cannot parse an override: {str(e).splitlines()[0]}; quote values with special characters"
    if isinstance(e, OmegaConfBaseException) and "Missing mandatory value: " in str(e):
        # a required key (predict.py's and explain.py's run=) not given, met directly or through an interpolation
        key = str(e).split("Missing mandatory value: ", 1)[1].splitlines()[0].strip()
        return f"{key}= is required: give it on the command line ({key}=<folder>; --help lists every option)"
    return None


def _look_up_groups_once() -> None:
    """Hydra's --help lists the config groups by walking the group tree twice, and each of its ~160 look-ups
    deep-copies the whole config store (regnn's model schemas and names included): 5-10 s before the first line.
    Nothing changes the store while the help is written, so each distinct look-up is answered once (~60)."""
    try:
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
    except ImportError:  # a Hydra laid out otherwise: its help as it is, only slower
        return
    import inspect

    look_up = ConfigLoaderImpl.get_group_options
    signature = inspect.signature(look_up)
    answers: dict = {}

    def once(self, *args, **kwargs):
        call = signature.bind(self, *args, **kwargs)  # the same look-up, whether by position, keyword or default
        call.apply_defaults()
        key = (id(self), repr(list(call.arguments.values())[1:]))
        if key not in answers:
            answers[key] = look_up(self, *args, **kwargs)
        return list(answers[key])

    ConfigLoaderImpl.get_group_options = once


def _group_options(conf: Path, group: str) -> list[str]:
    """A config group's options: its files, and what regnn registers in Hydra's ConfigStore (the model names)."""
    from hydra.core.config_store import ConfigStore

    stored = ConfigStore.instance().repo.get(group, {})
    names = {f.stem for f in (conf / group).glob("*.yaml")}
    return sorted(names | {k.removesuffix(".yaml") for k, v in stored.items() if k.endswith(".yaml")})


def unknown_sweep_value(argv: list[str], conf: Path) -> str | None:
    """The line refusing a sweep (-m) over a config group value that does not exist (model=gcn,re_gcnn), or None:
    Hydra would find it only when it composes that job, after the sweep has started and the jobs before it run."""
    if not {"-m", "--multirun"} & set(argv):
        return None
    if any(a.split("=", 1)[0] in ("--config-dir", "-cd", "--config-path", "-cp", "hydra.searchpath") for a in argv):
        return None  # groups from elsewhere: Hydra knows them, this check does not
    for arg in argv:
        group, sep, values = arg.partition("=")
        if not sep or not group.isidentifier() or not (conf / group).is_dir() or any(c in values for c in "()[]$'\""):
            continue  # a key, not a group; a sweep function, list, interpolation or quoted value Hydra reads itself
        options = _group_options(conf, group)
        for v in (v.strip() for v in values.split(",")):
            if v and v != "null" and v not in options:
                head = f"Could not find '{group}/{v}'"
                return f"{head} (in the sweep {arg}); {_did_you_mean(head, options)}available: {', '.join(options)}"
    return None


def run(main) -> None:
    """Calls the @hydra.main function `main` and exits with one line where Hydra fails before regnn's code runs."""
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises its errors to here instead of printing and exiting 1
    if {"--help", "-h", "--hydra-help"} & set(sys.argv[1:]):
        _look_up_groups_once()
    refused = unknown_sweep_value(sys.argv[1:], REPO_ROOT / "conf")
    if refused:
        print(refused, file=sys.stderr)
        sys.exit(2)
    try:
        main()
    except Interrupted as e:  # a local sweep stopped by a signal: each cell has said what it kept and how to resume
        sys.exit(128 + e.signum)
    except Exception as e:  # noqa: BLE001 (only Hydra's own errors and the run folder's are turned into a line)
        line = _hydra_line(e)  # first: Hydra's MissingConfigException is an OSError too
        if line is None and isinstance(e, OSError):  # the run folder: a file, a read-only parent, a full disk
            where = Path(e.filename) if e.filename else None
            why = (
                f"{where} is a file, not a folder"
                if where is not None and where.is_file()
                else f"cannot write to {where or 'the run folder'} ({e.strerror or type(e).__name__})"
            )
            line = f"{why}; give a writable folder with hydra.run.dir=<folder> (hydra.sweep.dir=<folder> for -m)"
        if line is None:
            raise
        print(line, file=sys.stderr)
        sys.exit(2)


def discard_unused_run_dir(out_dir: str | Path) -> None:
    """Removes a run folder that holds nothing but what Hydra wrote for this call (config, overrides, log), so that
    a refused command leaves nothing behind; a folder with anything else (earlier runs) is kept whole."""
    out = Path(out_dir)
    try:
        names = {p.name for p in out.iterdir()}
    except OSError:
        return
    if not names or not names <= HYDRA_FILES:
        return
    for handler in list(logging.getLogger().handlers):  # the job's log file handler holds train.log open
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).parent == out.resolve():
            handler.close()
            logging.getLogger().removeHandler(handler)
    shutil.rmtree(out / ".hydra", ignore_errors=True)
    for log_file in HYDRA_FILES - {".hydra"}:
        (out / log_file).unlink(missing_ok=True)
    try:
        out.rmdir()
    except OSError:
        pass


__all__ = ["run", "discard_unused_run_dir"]
