"""Where generated files go (``build/``) and where Liberty files come from (the PDK folder)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from .errors import VrexError

__all__ = ["build_root", "build_dir", "pdk_dir", "git_revision", "safe_name"]


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


def pdk_dir(configured: str = "", *, required: bool = True) -> Path | None:
    """The Liberty folder: the config's ``technology.pdk_dir``, else ``$VREX_PDK_DIR``."""
    value = configured or os.environ.get("VREX_PDK_DIR", "")
    if not value:
        if not required:
            return None
        raise VrexError("no Liberty folder is set; set VREX_PDK_DIR (or technology.pdk_dir in the config, or "
                        "--pdk-dir) to a folder holding sky130_fd_sc_hd__tt_025C_1v80.lib.gz and/or the asap7 "
                        "libraries, or pass --liberty PATH to a .lib file.")
    p = Path(value).expanduser()
    if not p.is_dir():
        if not required:
            return None
        raise VrexError(f"the Liberty folder {value!r} (from technology.pdk_dir or VREX_PDK_DIR) does not exist; "
                        "point it at a folder with the Liberty files.")
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
