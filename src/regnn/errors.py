"""Errors a user can fix. The entry points print their message (no traceback) and exit non-zero."""

import reprlib

QUOTE_CHARS = 80  # a value quoted in a message is cut here
_REPR = reprlib.Repr()  # attributes, not keywords: Repr takes keywords from Python 3.12 only
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, QUOTE_CHARS, QUOTE_CHARS, 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6


def quote(value, limit: int = QUOTE_CHARS) -> str:
    """repr(value) for a message, never more than `limit` characters: reprlib shortens long strings, numbers and
    containers without building their whole repr (a YAML alias can expand to megabytes)."""
    r = _REPR.repr(value)
    return r if len(r) <= limit else f"{r[: limit - 3]}..."


class RegnnError(Exception):
    """Base class: the message says what is wrong and how to fix it, on one line: control characters from a user's
    names (a newline or carriage return in a file name) are shown escaped."""

    def __str__(self) -> str:
        msg = super().__str__()
        return msg if msg.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in msg)


class DataError(RegnnError):
    """A dataset file is missing, corrupt or inconsistent."""


class ConfigError(RegnnError):
    """A configuration value is unknown or out of range."""


class CellBusy(RegnnError):
    """Another live process is training into the same output directory."""


class Unsupported(ConfigError):
    """A valid model that cannot train on this graph (e.g. a meta-path model on a graph without meta-paths): a sweep
    over several models names it in one line and goes on with the others."""
