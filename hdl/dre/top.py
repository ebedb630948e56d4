"""DRE top: the HCU, the WTU (with its GQA aggregation) and the KVMU behind one component, with control and status.

With ``external=True`` the component is the DRE's *glue* (its status counters and the wiring): the HCU, WTU and
KVMU become ports (``hcu``, ``wtu``, ``kvmu``) for hierarchical figures (hdl/lxe/parts.py, docs/figures.md).
"""

from amaranth import Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.hcu import HCU
from vrex.hdl.dre.kvmu import KVMU, KVMU_COUNTERS
from vrex.hdl.dre.kvmu.axi import axi4_signature, connect_port, drive_constants
from vrex.hdl.dre.wtu.linear import WTU
from vrex.hdl.lxe.parts import Built, part, part_members
from vrex.hdl.unused import silence_unused

__all__ = ["DRE", "DRE_COUNTERS"]

# Status counters: name -> meaning. Each is `dre.counter_bits` wide, counts events at the DRE's own ports (the
# handshake of a transfer, or a strobe of a block) one cycle after they happen (the increment is registered),
# wraps around, and is zeroed by reset or by `clear`.
DRE_COUNTERS = {
    "cycles": "clock cycles",
    "hcu_busy_cycles": "cycles in which the HCU holds work (items buffered or in flight, or an assignment waiting)",
    "hcu_tokens": "assignments delivered at `assignments`",
    "hcu_new_clusters": "assignments that opened a cluster (new and not full)",
    "hcu_full_events": "assignments made with a full code memory (`full`: spilled or joined regardless)",
    "hcu_group_exits": "HCU lane groups that ended before their last bit slice (early exit)",
    "hcu_scan_stops": "HCU token scans that ended before the last open lane group (early exit)",
    "wtu_active_cycles": "cycles from a WTU job's first count beat to its last `selection` beat",
    "wtu_rows": "score rows whose mask was delivered at `rows`",
    "wtu_jobs": "jobs (GQA groups) whose aggregated mask was delivered at `selection`",
    "wtu_selected": "clusters selected, summed over rows",
    "wtu_buckets_walked": "buckets the WiCSum walk visited, summed over rows (0 in top-k mode)",
    "wtu_errors": "rows of rejected jobs (N = 0 or N > row capacity)",
}


class DRE(wiring.Component):
    """Dynamic KV-cache retrieval engine datapath: HCU + WTU + row aggregation.

    The two blocks work independently: hash codes from the LXE are clustered by the HCU (assignments go to the
    KV memory manager's HC-table updater), and cluster scores from the LXE are thresholded by the WTU (the
    per-row masks and the OR-aggregated mask of each GQA group go to the KV memory manager, which maps selected
    clusters to token ranges and prefetches them). Protocols, number formats and cycle formulas are those of
    the blocks (docs/formats.md §HCU, §WTU); the top adds no latency (ports are the blocks' own streams).

    Parameters
    ----------
    cfg : vrex.config.Config
        Every parameter (``resv``, ``dre.hcu``, ``dre.wtu``, ``dre.counter_bits``). ``dre.wtu.mode`` is chosen at
        generation time.

    Members
    -------
    codes : In(stream)            HCU input items ``{code, preload, last}`` (from the LXE / HC-table staging).
    assignments : Out(stream)     HCU assignments ``{token, cluster, distance, new, full, first, last}``.
    counts : In(stream)           WTU token counts of a job's clusters (from the HC table).
    scores : In(stream)           WTU score rows (from the LXE); with ``resv.threshold_mass = row`` each row's
                                  resident input on its first beat (docs/formats.md §WTU row mass).
    rows : Out(stream)            WTU per-row cluster masks with status.
    selection : Out(stream)       WTU OR-aggregated mask of each job (GQA group): what to prefetch.
    threshold : In                Th_hd for the HCU (latched per job, see HCU).
    ratio : In                    WiCSum ratio, Q0.ratio_bits (``early_exit`` / ``histogram`` modes).
    k : In                        clusters kept per row (``topk`` mode).
    clear : In(1)                 zero every status counter (synchronous, while high).
    kvmu_ctrl, kvmu_tokens, kvmu_masks : In(stream)   the KVMU's jobs (control, token descriptors, cluster masks).
    kvmu_resp : Out(stream)       the KVMU's job responses.
    dev, host, tbl : Out          the KVMU's AXI4 masters (device tier, host tier, HC table in device memory).
    status : Out                  the counters of :data:`DRE_COUNTERS`, plus ``hcu_busy``, ``hcu_open_slots`` and
                                  ``hcu_preload_overflow`` passed through from the HCU, and the KVMU's counters
                                  (:data:`vrex.hdl.dre.kvmu.KVMU_COUNTERS`) and busy flag as ``kvmu_<name>``.

    The KVMU works beside the HCU and WTU: the sequencer turns HCU assignments into its token descriptors and WTU
    group masks (positions of the candidate list) into its cluster masks (cluster ids), both HC-table lookups.
    """

    def __init__(self, cfg, *, constant_fields: bool = True, external: bool = False):
        """``constant_fields`` False leaves the AXI fields the KVMU ties (IDs, sizes, bursts, ``bready``, the data
        ports' strobes) out of ``dev``, ``host`` and ``tbl``, for a parent that ties them at its own ports (the core
        top: a submodule's constant outputs would leave unused wires behind). ``external``: the glue (module
        docstring)."""
        self._constant_fields, self.external = constant_fields, external
        self._hcu = HCU.from_config(cfg)
        self._wtu = WTU.from_config(cfg)
        self._kvmu = KVMU.from_config(cfg, constant_fields=False)
        self._counter_bits = cfg.dre.counter_bits
        h, w, k = self._hcu.signature.members, self._wtu.signature.members, self._kvmu.signature.members
        status = {name: Out(self._counter_bits) for name in DRE_COUNTERS}
        status.update({"hcu_busy": Out(1), "hcu_open_slots": Out(h["open_slots"].shape),
                       "hcu_preload_overflow": Out(1)})
        status.update({f"kvmu_{name}": Out(self._counter_bits) for name in KVMU_COUNTERS} | {"kvmu_busy": Out(1)})
        members = {
            "codes": h["i"], "assignments": h["o"],
            "counts": w["counts"], "scores": w["scores"], "rows": w["row"], "selection": w["group"],
            "kvmu_ctrl": k["ctrl"], "kvmu_tokens": k["tokens"], "kvmu_masks": k["masks"], "kvmu_resp": k["resp"],
            **{port: Out(axi4_signature(*self._axi_widths(cfg), constants=constant_fields,
                                        strobes=constant_fields or port == "tbl")) for port in ("dev", "host", "tbl")},
            "threshold": h["threshold"], "clear": In(1), "status": Out(wiring.Signature(status)),
        }
        members.update({name: w[name] for name in ("ratio", "k") if name in w})
        self._subs = {"hcu": Built(self._hcu), "wtu": Built(self._wtu), "kvmu": Built(self._kvmu)}
        members.update(part_members(self._subs, external))
        if external:
            # built for their signatures only: the glue leaves them out
            silence_unused([self._hcu, self._wtu, self._kvmu])
        super().__init__(members)

    def hierarchy_parts(self) -> dict:
        return dict(self._subs)

    @classmethod
    def from_config(cls, cfg, *, constant_fields: bool = True, external: bool = False):
        return cls(cfg, constant_fields=constant_fields, external=external)

    @staticmethod
    def _axi_widths(cfg):
        k = cfg.dre.kvmu
        return k.axi_addr_bits, k.axi_data_bits, k.axi_id_bits

    def elaborate(self, platform):
        m = Module()
        hcu, wtu, kvmu = (part(m, self, name, self._subs[name], self.external) for name in ("hcu", "wtu", "kvmu"))
        for name in ("ctrl", "tokens", "masks"):
            wiring.connect(m, wiring.flipped(getattr(self, f"kvmu_{name}")), getattr(kvmu, name))
        wiring.connect(m, kvmu.resp, wiring.flipped(self.kvmu_resp))
        g = self._kvmu.geometry
        for port in ("dev", "host", "tbl"):     # constant fields are tied here, the rest passes through
            connect_port(m, getattr(kvmu, port), getattr(self, port))
            if self._constant_fields:
                drive_constants(m, getattr(self, port), g.beat_shift, g.beat_bytes, strobes=port == "tbl")
        m.d.comb += kvmu.clear.eq(self.clear)
        wiring.connect(m, wiring.flipped(self.codes), hcu.i)
        wiring.connect(m, hcu.o, wiring.flipped(self.assignments))
        wiring.connect(m, wiring.flipped(self.counts), wtu.counts)
        wiring.connect(m, wiring.flipped(self.scores), wtu.scores)
        wiring.connect(m, wtu.row, wiring.flipped(self.rows))
        wiring.connect(m, wtu.group, wiring.flipped(self.selection))
        m.d.comb += hcu.threshold.eq(self.threshold)
        for name in ("ratio", "k"):
            if hasattr(wtu, name):
                m.d.comb += getattr(wtu, name).eq(getattr(self, name))

        st = self.status
        m.d.comb += [st.hcu_busy.eq(hcu.busy), st.hcu_open_slots.eq(hcu.open_slots),
                     st.hcu_preload_overflow.eq(hcu.preload_overflow)]
        m.d.comb += [getattr(st, f"kvmu_{name}").eq(getattr(kvmu.status, name))
                     for name in list(KVMU_COUNTERS) + ["busy"]]

        a, r, s, c = self.assignments, self.rows, self.selection, self.counts
        a_fire, r_end = a.valid & a.ready, r.valid & r.ready & r.payload.last
        s_end, c_fire = s.valid & s.ready & s.payload.last, c.valid & c.ready
        increments = {
            "cycles": 1,
            "hcu_busy_cycles": hcu.busy,
            "hcu_tokens": a_fire,
            "hcu_new_clusters": a_fire & a.payload.new & ~a.payload.full,
            "hcu_full_events": a_fire & a.payload.full,
            "hcu_group_exits": hcu.group_exit,
            "hcu_scan_stops": hcu.scan_stop,
            "wtu_rows": r_end,
            "wtu_jobs": s_end,
            "wtu_selected": r_end * r.payload.selected,
            "wtu_buckets_walked": r_end * r.payload.buckets_walked,
            "wtu_errors": r_end & r.payload.error,
        }
        # A WTU job is active from its first count beat until its aggregated mask has been delivered.
        active = _flag(m, set_=c_fire, clear=s_end)
        increments["wtu_active_cycles"] = active | c_fire
        # Each increment is registered and added one cycle after its event, so no block's strobe logic and a
        # counter's carry share a cycle (the DRE's critical path on ASAP7 was hcu.scan_stop → a 32-bit counter's
        # carry chain). Events in cycles with `clear` high are not counted.
        with m.If(self.clear):
            m.d.sync += [getattr(st, name).eq(0) for name in DRE_COUNTERS]
        with m.Else():
            m.d.sync += [getattr(st, name).eq(getattr(st, name) + _registered(m, inc, self.clear, name))
                         for name, inc in increments.items()]
        return m


def _registered(m, increment, clear, name):
    """``increment`` one cycle later (0 after a cycle with ``clear``); a constant stays a constant."""
    if isinstance(increment, int):
        return increment
    value = Value.cast(increment)
    reg = Signal(value.shape(), name=f"{name}_inc")
    m.d.sync += reg.eq(Mux(clear, 0, value))
    return reg


def _flag(m, *, set_, clear):
    """A register set by ``set_`` and cleared by ``clear`` (clear wins in the same cycle)."""
    flag = Signal()
    with m.If(clear):
        m.d.sync += flag.eq(0)
    with m.Elif(set_):
        m.d.sync += flag.eq(1)
    return flag
