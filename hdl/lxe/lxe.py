"""LXE top: the DPE, the VPE and the SRAM banks of one core behind one component (their streams re-exported)."""

from amaranth import Module
from amaranth.lib import wiring

from .dpe import DPE
from .parts import Part, part, part_members
from .sram import LxeSram
from .vpe import VPE

__all__ = ["LXE"]


class LXE(wiring.Component):
    """One core's LLM execution engine: DPE (``lxe.dpe_trees`` MAC trees of ``lxe.dpe_inputs``), VPE
    (``lxe.vpe_units x lxe.vpe_lanes`` lanes) and the SRAM (``lxe.sram_kib`` KiB in ``lxe.sram_banks`` banks).

    Members: ``dpe_i`` / ``dpe_o`` (:class:`~.dpe.DPE` streams), ``vpe_i`` / ``vpe_o`` (:class:`~.vpe.VPE`),
    ``sram_cmd`` / ``sram_rdata`` (:class:`~.sram.LxeSram`). The top adds no logic and no
    latency; the sequencer of the core routes between them (hdl/core/sequencer.py).
    """

    def __init__(self, cfg, *, external=False):
        self._cfg, self.external = cfg, external
        self._parts = {"dpe": Part(DPE, **DPE.config_args(cfg)), "vpe": Part(VPE, **VPE.config_args(cfg))}
        d, v = self._parts["dpe"].signature.members, self._parts["vpe"].signature.members
        self._sram = LxeSram.from_config(cfg)
        s = self._sram.signature.members
        super().__init__({"dpe_i": d["i"], "dpe_o": d["o"], "vpe_i": v["i"], "vpe_o": v["o"],
                          "sram_cmd": s["cmd"], "sram_rdata": s["rdata"],
                          **part_members(self._parts, external)})

    @classmethod
    def from_config(cls, cfg, *, external=False):
        return cls(cfg, external=external)

    def hierarchy_parts(self) -> dict:
        return dict(self._parts)

    def elaborate(self, platform):
        m = Module()
        dpe = part(m, self, "dpe", self._parts["dpe"], self.external)
        vpe = part(m, self, "vpe", self._parts["vpe"], self.external)
        m.submodules.sram = sram = self._sram
        for outer, inner in (("dpe_i", dpe.i), ("vpe_i", vpe.i), ("sram_cmd", sram.cmd)):
            wiring.connect(m, wiring.flipped(getattr(self, outer)), inner)
        for outer, inner in (("dpe_o", dpe.o), ("vpe_o", vpe.o), ("sram_rdata", sram.rdata)):
            wiring.connect(m, inner, wiring.flipped(getattr(self, outer)))
        return m
