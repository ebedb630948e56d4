"""Sub-blocks of a composite component that hierarchical synthesis measures alone.

A composite (DPE, VPE, LXE, core) builds its sub-blocks through :func:`part`. Normally that instantiates the
sub-block. With ``external=True`` the composite becomes its own *glue*: every sub-block is replaced by a port of
the glue with the sub-block's signature flipped (``In(sub.signature)``), so the glue is a self-contained design
(the composite's logic without the sub-blocks) that Yosys and OpenSTA can measure; the figures flow adds
``count x`` the sub-block's own figures (docs/figures.md "Hierarchical figures").
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In

__all__ = ["Part", "part_members", "part"]


class Part:
    """A sub-block to build: its component class, constructor arguments and signature (known without building it,
    so a glue never creates components it does not use)."""

    def __init__(self, cls, **args):
        self.cls, self.args = cls, args

    @property
    def signature(self):
        return self.cls.make_signature(**self.args)

    def build(self):
        return self.cls(**self.args)


def part_members(parts: dict, external: bool) -> dict:
    """Extra signature members of a glue: ``{port name: In(sub signature)}`` for each named :class:`Part`."""
    return {name: In(p.signature) for name, p in parts.items()} if external else {}


def part(m, component, name, spec: Part, external: bool):
    """The interface to connect to: the sub-block itself (built and added as a submodule) or the glue's port."""
    if external:
        return wiring.flipped(getattr(component, name))
    sub = m.submodules[name] = spec.build()
    return sub
