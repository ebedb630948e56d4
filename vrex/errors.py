"""Errors that the CLI reports as one clear sentence (no traceback); checks of the paths and counts a user gives.

The path checks run before a command starts its work, so a bad output path fails at once and nothing computed is
lost (every package may use them; vrex.golden imports only this module and vrex.config). The count checks
(:func:`positive_int`, :func:`non_negative_int`, :func:`stall_probability`) are argparse ``type=`` functions shared
by every sub-command: a bad value is argparse's usage error (the option named in one sentence, exit code 2) before
anything runs.
"""

import argparse
import errno
from pathlib import Path

__all__ = ["VrexError", "ConfigError", "ToolMissingError", "ToolFailedError", "TraceError", "UsageError",
           "output_folder", "output_file", "input_file", "os_error_message", "positive_int", "non_negative_int",
           "stall_probability"]


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


def _blocking_file(p: Path) -> Path | None:
    """The first existing ancestor of ``p`` (or ``p`` itself) that is a file, if any."""
    for q in [p, *p.parents]:
        if q.exists():
            return q if not q.is_dir() else None
    return None


def output_folder(value, option: str) -> Path:
    """The folder an option names for output, checked before any work starts (created if missing)."""
    p = Path(value).expanduser()
    blocker = _blocking_file(p)
    if blocker == p:
        raise UsageError(f"{option} {value}: this is a file, not a folder; give a folder for the output (a new "
                         "or an existing one).")
    if blocker is not None:
        raise UsageError(f"{option} {value}: {blocker} is a file, so no folder can be made below it; give another "
                         "path.")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{option} {value}: {os_error_message(e)}") from None
    return p


def output_file(value, option: str) -> Path:
    """The file an option names for output, checked before any work starts (its folder is created if missing)."""
    p = Path(value).expanduser()
    if p.is_dir():
        raise UsageError(f"{option} {value}: this is a folder; give a file name (e.g. {Path(value) / 'out.json'}).")
    blocker = _blocking_file(p.parent)
    if blocker is not None:
        raise UsageError(f"{option} {value}: {blocker} is a file, so it cannot hold {p.name}; give another path.")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{option} {value}: {os_error_message(e)}") from None
    return p


def input_file(value, option: str, what: str) -> Path:
    """A file an option names for input: it must exist and be a file."""
    p = Path(value).expanduser()
    if p.is_dir():
        raise UsageError(f"{option} {value}: this is a folder; give the {what} file.")
    if not p.is_file():
        raise UsageError(f"{option} {value}: no such file; give the path of the {what}.")
    return p


def _int_at_least(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < least:
        raise argparse.ArgumentTypeError(f"must be a whole number ≥ {least}, not {text!r}.")
    return value


def positive_int(text: str) -> int:
    """argparse ``type=`` of a count that must be ≥ 1 (transactions, frames, jobs, workers, tokens ...)."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """argparse ``type=`` of a count where 0 has a meaning (``0 = all``, ``0 = the default``) but < 0 has none."""
    return _int_at_least(text, 0)


def stall_probability(text: str) -> float:
    """argparse ``type=`` of the probability that a port idles in a cycle: 0 ≤ p < 1 (at 1 nothing ever moves)."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be a probability 0 ≤ p < 1 (at 1 no transaction ever moves), not "
                                         f"{text!r}.")
    return value


_OS_REASONS = {
    errno.EEXIST: "a file is in the way where a folder is needed; give another path or remove the file",
    errno.ENOTDIR: "part of this path is a file, not a folder; give another path",
    errno.EISDIR: "this is a folder where a file is needed; give a file path",
    errno.ENOENT: "no such file or folder",
    errno.EACCES: "permission denied; choose a location you can write to",
    errno.EPERM: "permission denied; choose a location you can write to",
    errno.ENOSPC: "no space left on the device; free some space",
    errno.EROFS: "the file system is read-only; choose another location",
}


def os_error_message(e: OSError) -> str:
    """One sentence for a file-system error: the path and what to do."""
    where = f"{e.filename}: " if e.filename else ""
    reason = _OS_REASONS.get(e.errno, (e.strerror or str(e)).lower())
    return f"{where}{reason}."
