"""Marking designs that are built but deliberately never elaborated (for their signature only, or dropped on an
error), so that Amaranth's ``UnusedElaboratable`` warning does not fire when they are garbage-collected."""

from amaranth.hdl import Elaboratable

__all__ = ["silence_unused"]


def silence_unused(design, seen=None) -> None:
    """Set Amaranth's per-object ``_MustUse__silence`` flag on ``design`` and on every block its constructor built
    (attributes, dicts, lists and tuples of them, recursively)."""
    seen = set() if seen is None else seen
    if id(design) in seen:
        return
    seen.add(id(design))
    if isinstance(design, Elaboratable):
        design._MustUse__silence = True
    children = design.values() if isinstance(design, dict) else design if isinstance(design, (list, tuple)) else \
        vars(design).values() if isinstance(design, Elaboratable) else ()
    for child in children:
        if isinstance(child, (Elaboratable, dict, list, tuple)):
            silence_unused(child, seen)
