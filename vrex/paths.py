"""Where generated files go (``build/``) and where Liberty files come from (the PDK folder, embedded by default)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from .errors import VrexError

__all__ = ["build_root", "build_dir", "pdk_dir", "pdk_source", "embedded_pdk_dir", "git_revision", "safe_name"]


def build_root() -> Path:
    """``$VREX_BUILD_DIR`` or ``./build``: every generated artefact lives below it (git ignores it)."""
    return Path(os.environ.get("VREX_BUILD_DIR", "build")).absolute()


def build_dir(*parts: str) -> Path:
    d = build_root().joinpath(*parts)
    d.mkdir(parents=True, exist_ok=True)
    return d


def safe_name(text: str) -> str:
    """A file-system-safe version of a test id or component name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def embedded_pdk_dir() -> Path:
    """The Liberty folder that ships inside vrex (sky130 hd and ASAP7, ``vrex/synth/pdk``; licences there)."""
    from importlib import resources

    return Path(str(resources.files("vrex.synth") / "pdk"))


def pdk_source(configured: str = "") -> str:
    """Where :func:`pdk_dir` takes the Liberty folder from: ``technology.pdk_dir``, ``VREX_PDK_DIR`` or ``embedded``."""
    if configured:
        return "technology.pdk_dir"
    return "VREX_PDK_DIR" if os.environ.get("VREX_PDK_DIR") else "embedded"


def pdk_dir(configured: str = "", *, required: bool = True) -> Path | None:
    """The Liberty folder: the config's ``technology.pdk_dir``, else ``$VREX_PDK_DIR``, else the embedded one.

    A folder that is named but does not exist raises (``required``) or gives None; it never falls back silently
    to the embedded libraries, so a typo in an override is not hidden.
    """
    value = configured or os.environ.get("VREX_PDK_DIR", "")
    if not value:
        return embedded_pdk_dir()
    p = Path(value).expanduser()
    if not p.is_dir():
        if not required:
            return None
        source = "technology.pdk_dir" if configured else "VREX_PDK_DIR"
        raise VrexError(f"the Liberty folder {value!r} (from {source}) does not exist; point it at a folder with the "
                        "Liberty files, or unset it to use the libraries embedded in vrex.")
    return p.absolute()


def git_revision() -> str:
    """Short git revision of the source checkout, with ``+dirty`` when it has uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10)
        if rev.returncode:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
