"""Errors a user can fix. The entry points print their message (no traceback) and exit non-zero."""


class RegnnError(Exception):
    """Base class: the message says what is wrong and how to fix it."""


class DataError(RegnnError):
    """A dataset file is missing, corrupt or inconsistent."""


class ConfigError(RegnnError):
    """A configuration value is unknown or out of range."""


class CellBusy(RegnnError):
    """Another live process is training into the same output directory."""


class Unsupported(ConfigError):
    """A valid model that cannot train on this graph (e.g. a meta-path model on a graph without meta-paths): a sweep
    over several models names it in one line and goes on with the others."""
