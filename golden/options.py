"""Command-line values the golden sub-commands share (``vrex golden``, ``vrex niah``)."""

from __future__ import annotations

from vrex.errors import UsageError

__all__ = ["parse_index_list"]


def parse_index_list(text: str | None, n: int, what: str) -> list[int] | None:
    """``"0,3,5"``, ``"0-7"``, ``"all"`` or None → sorted indices within ``0..n-1`` (None = all)."""
    if text is None or text == "all":
        return None
    out = set()
    try:
        for part in text.split(","):
            if "-" in part:
                a, b = part.split("-")
                out |= set(range(int(a), int(b) + 1))
            else:
                out.add(int(part))
    except ValueError:
        raise UsageError(f"--{what} {text!r}: give indices like 0,3,5 or a range like 0-7, or all.") from None
    bad = [i for i in out if not 0 <= i < n]
    if bad or not out:
        raise UsageError(f"--{what} {text!r}: {what} are 0..{n - 1}.")
    return sorted(out)
