"""Where the golden model caches derived data (decoded and encoded video features).

vrex.golden may import only vrex.config and vrex.errors of the project, so this repeats the one rule of
``vrex.paths.build_root``: generated files live under ``$VREX_BUILD_DIR`` or ``./build`` (git ignores it).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["golden_cache_dir"]


def golden_cache_dir(*parts: str) -> Path:
    """``<build root>/golden/<parts…>`` (not created here; writers create what they fill)."""
    return Path(os.environ.get("VREX_BUILD_DIR", "build")).absolute().joinpath("golden", *parts)
