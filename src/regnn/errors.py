"""Errors a user can fix. The entry points print their message (no traceback) and exit non-zero."""


class RegnnError(Exception):
    """Base class: the message says what is wrong and how to fix it."""


class DataError(RegnnError):
    """A dataset file is missing, corrupt or inconsistent."""


class ConfigError(RegnnError):
    """A configuration value is unknown or out of range."""


class CellBusy(RegnnError):
    """Another live process is training into the same output directory."""
