"""The V-Rex core top: the LXE (DPE, VPE, SRAM) and the DRE (HCU, WTU) of one core behind one component.

This top composes the two engines with their streams re-exported (``lxe_*`` and ``dre_*`` ports) and adds no logic.
The retrieval-path sequencer that would route DPE results through the VPE into the HCU and WTU (hash bits, cluster
sums, scores) is not part of it yet (docs/results-rtl.md, "V-Rex core"); the core's figures are the engines'
hierarchical figures (docs/figures.md "Hierarchical figures")."""

from amaranth import Module
from amaranth.lib import wiring

from .dre import DRE
from .lxe.lxe import LXE

__all__ = ["Core"]


class Core(wiring.Component):
    """LXE + DRE of one V-Rex core. Members: every LXE port as ``lxe_<port>``, every DRE port as ``dre_<port>``."""

    def __init__(self, cfg, *, external=False):
        self.external = external
        self._subs = {"lxe": LXE.from_config(cfg), "dre": DRE.from_config(cfg)}
        members = {}
        for name, sub in self._subs.items():
            members.update({f"{name}_{k}": v for k, v in sub.signature.members.items()})
            if external:
                members[name] = wiring.In(sub.signature)
                sub._MustUse__silence = True      # built for its signature only: the glue leaves it out
        super().__init__(members)

    @classmethod
    def from_config(cls, cfg, *, external=False):
        return cls(cfg, external=external)

    def elaborate(self, platform):
        m = Module()
        for name, sub in self._subs.items():
            if self.external:
                sub = wiring.flipped(getattr(self, name))
            else:
                m.submodules[name] = sub
            for k, member in self._subs[name].signature.members.items():
                outer, inner = getattr(self, f"{name}_{k}"), getattr(sub, k)
                if member.is_port:
                    m.d.comb += (inner.eq(outer) if member.flow == wiring.In else outer.eq(inner))
                elif member.flow == wiring.In:
                    wiring.connect(m, wiring.flipped(outer), inner)
                else:
                    wiring.connect(m, inner, wiring.flipped(outer))
        return m
