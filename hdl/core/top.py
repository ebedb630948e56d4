"""The V-Rex core top: the LXE (DPE, VPE, SRAM) and the DRE (HCU, WTU, KVMU) of one core, and the sequencer that
runs a decoder layer's retrieval path on them (hdl/core/sequencer.py; docs/formats.md §Core).

Ports: the sequencer's command and response streams, the host's access to the LXE SRAM between commands, the
HCU's assignments and the WTU's row and group masks (forwarded: the HC-table log and the selections), the
KVMU's three AXI4 masters (``kvmu_dev``, ``kvmu_host``, ``kvmu_tbl``) and the sequencer's HC-table master (``hct``), the DRE's
control inputs (``threshold``, ``ratio`` or ``k``, and any the WTU adds), ``clear`` and the status counters of the
DRE and the sequencer. With ``resv.threshold_mass = row`` the resident-mass unit (hdl/core/resident_mass.py) is a
third part beside them, driven by the sequencer. With ``external=True`` the component is the core's *glue* (the
sequencer and the wiring): the LXE, the DRE and the resident-mass unit become ports (``lxe``, ``dre``,
``resident_mass``) for hierarchical figures.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.top import DRE
from vrex.hdl.dre.kvmu.axi import axi4_signature, connect_port, drive_constants
from ..lxe.lxe import LXE
from ..lxe.parts import Built, part, part_members
from ..unused import silence_unused
from .geometry import CoreGeometry
from .resident_mass import ResidentMass
from .sequencer import Sequencer

__all__ = ["Core"]

LXE_STREAMS = ("dpe_i", "dpe_o", "vpe_i", "vpe_o", "sram_cmd", "sram_rdata")
DRE_STREAMS = ("codes", "assignments", "counts", "scores", "selection", "kvmu_ctrl", "kvmu_tokens", "kvmu_masks",
               "kvmu_resp")
AXI_PORTS = ("dev", "host", "tbl")


def _stream(member):
    """The stream signature of a member, as its producer sees it."""
    return member.signature.flip() if member.flow == In else member.signature


class Core(wiring.Component):
    """LXE + DRE + retrieval-path sequencer of one V-Rex core (see the module docstring)."""

    def __init__(self, cfg, *, external=False):
        self.external = external
        self._geometry = CoreGeometry.from_config(cfg)
        self._lxe, self._dre = LXE.from_config(cfg), DRE.from_config(cfg, constant_fields=False)
        self._subs = {"lxe": Built(self._lxe), "dre": Built(self._dre)}
        lx, dr = (s.signature.members for s in self._subs.values())
        g = self._geometry
        self._rmu = rmu = None if g.resident is None else ResidentMass(g.resident)
        if rmu is not None:
            self._subs["resident_mass"] = Built(rmu)
        self._ports = {**{n: _stream(lx[n]) for n in LXE_STREAMS}, **{n: _stream(dr[n]) for n in DRE_STREAMS}}
        self._seq = Sequencer(self._geometry, self._ports, None if rmu is None else rmu.signature)
        sq = self._seq.signature.members
        self._controls = [n for n, mem in dr.items() if mem.is_port and mem.flow == In and n != "clear"]
        members = {
            "cmd": sq["cmd"], "resp": sq["resp"], "sram_cmd": sq["host_cmd"], "sram_rdata": sq["host_rdata"],
            "assignments": Out(self._ports["assignments"]), "rows": dr["rows"],
            "selection": Out(self._ports["selection"]),
            **{name: Out(axi4_signature(g.addr_bits, g.data_bits, g.id_bits)) for name in (
                *(f"kvmu_{p}" for p in AXI_PORTS), "hct")},
            **{n: dr[n] for n in self._controls}, "clear": In(1),
            "status": Out(wiring.Signature({"dre": Out(dr["status"].signature), "core": Out(sq["status"].signature)})),
        }
        members.update(part_members(self._subs, external))
        if external:
            silence_unused([sub.component for sub in self._subs.values()])   # built for their signatures only
        super().__init__(members)

    @classmethod
    def from_config(cls, cfg, *, external=False):
        return cls(cfg, external=external)

    @property
    def geometry(self) -> CoreGeometry:
        return self._geometry

    def sequencer_states(self) -> dict:
        """The sequencer's FSM states (name -> the signal that is high while it is active), once elaborated."""
        return self._seq.states

    def hierarchy_parts(self) -> dict:
        return dict(self._subs)

    def elaborate(self, platform):
        m = Module()
        lxe, dre = (part(m, self, name, self._subs[name], self.external) for name in ("lxe", "dre"))
        m.submodules.sequencer = seq = self._seq
        if "resident_mass" in self._subs:
            wiring.connect(m, seq.resident_unit, part(m, self, "resident_mass", self._subs["resident_mass"],
                                                      self.external))
        for name in ("dpe_i", "vpe_i", "sram_cmd"):
            wiring.connect(m, getattr(seq, name), getattr(lxe, name))
        for name in ("dpe_o", "vpe_o", "sram_rdata"):
            wiring.connect(m, getattr(lxe, name), getattr(seq, name))
        for name in ("codes", "counts", "scores", "kvmu_ctrl", "kvmu_tokens", "kvmu_masks"):
            wiring.connect(m, getattr(seq, name), getattr(dre, name))
        wiring.connect(m, dre.assignments, seq.assign_in)
        wiring.connect(m, dre.selection, seq.group_in)
        wiring.connect(m, dre.kvmu_resp, seq.kvmu_resp)
        wiring.connect(m, seq.assign_out, wiring.flipped(self.assignments))
        wiring.connect(m, seq.group_out, wiring.flipped(self.selection))
        wiring.connect(m, dre.rows, wiring.flipped(self.rows))
        wiring.connect(m, wiring.flipped(self.cmd), seq.cmd)
        wiring.connect(m, seq.resp, wiring.flipped(self.resp))
        wiring.connect(m, wiring.flipped(self.sram_cmd), seq.host_cmd)
        wiring.connect(m, seq.host_rdata, wiring.flipped(self.sram_rdata))
        # constant AXI fields are tied here (a submodule's constant outputs would leave unused aliases behind)
        g = self._geometry
        for port in AXI_PORTS:
            outer = getattr(self, f"kvmu_{port}")
            connect_port(m, getattr(dre, port), outer)
            drive_constants(m, outer, g.beat_shift, g.beat_bytes, strobes=port == "tbl")
        connect_port(m, seq.table, self.hct)
        drive_constants(m, self.hct, g.beat_shift, g.beat_bytes, strobes=True)
        wiring.connect(m, dre.status, wiring.flipped(self.status.dre))
        wiring.connect(m, seq.status, wiring.flipped(self.status.core))
        m.d.comb += [getattr(dre, n).eq(getattr(self, n)) for n in self._controls]
        m.d.comb += [dre.clear.eq(self.clear), seq.clear.eq(self.clear)]
        return m
