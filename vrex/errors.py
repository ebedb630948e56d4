"""Errors that the CLI reports as one clear sentence (no traceback)."""

__all__ = ["VrexError", "ConfigError", "ToolMissingError", "ToolFailedError", "TraceError", "UsageError"]


class VrexError(Exception):
    """Base class of every error the user can cause and fix; the CLI prints it and exits non-zero."""

    exit_code = 2


class ConfigError(VrexError):
    """An invalid configuration value; the message names the key, the value and the rule."""

    def __init__(self, key, value, rule, *, source=None, line=None):
        self.key, self.value, self.rule, self.source, self.line = key, value, rule, source, line
        where = ""
        if source is not None:
            where = f"{source}" + (f", line {line}" if line is not None else "") + ": "
        what = f"{key} = {value!r}: " if key is not None else ""
        super().__init__(f"{where}{what}{rule}")


class ToolMissingError(VrexError):
    """A required external tool is not installed; the message says how to install it."""

    exit_code = 3


class ToolFailedError(VrexError):
    """An external tool ran and failed; the message points at its log."""

    exit_code = 4


class TraceError(VrexError):
    """An unreadable, corrupt or mis-shaped trace file or missing optional trace data."""


class UsageError(VrexError):
    """A command-line request that cannot be served (unknown component, bad option combination)."""
