"""The KVMU top: front-end, coalescer, legaliser, AXI engines and the table port behind one component."""

from amaranth import Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.kvmu.axi import axi4_signature, connect_port, drive_constants
from vrex.hdl.dre.kvmu.coalescer import Coalescer
from vrex.hdl.dre.kvmu.engines import Engines
from vrex.hdl.dre.kvmu.frontend import FrontEnd
from vrex.hdl.dre.kvmu.layouts import KVMUGeometry
from vrex.hdl.dre.kvmu.legaliser import Legaliser
from vrex.hdl.dre.kvmu.table import TableAccess

__all__ = ["KVMU", "KVMU_COUNTERS"]

# Status counters (``dre.counter_bits`` wide, wrap around, zeroed by reset or ``clear``). The first nine are
# bit-exact with the golden model's counters (vrex.golden.dre.kvmu.model.STAT_KEYS); the last two depend on timing.
KVMU_COUNTERS = {
    "jobs": "responses delivered",
    "payload_bytes": "bytes of the ranges the front-end emitted (before coalescing)",
    "bytes_moved": "bytes written by the data engines (whole beats; coalescing gaps included)",
    "bursts": "data bursts (one read and one write burst each)",
    "commands": "coalesced transfers handed to the legaliser",
    "stalls": "HC-table accesses (each one a device-DRAM round trip the front-end waits for)",
    "table_reads": "HC-table reads",
    "table_writes": "HC-table writes",
    "errors": "error events reported in responses",
    "busy_cycles": "cycles with a job in progress",
    "port_wait_cycles": "cycles a data-port AR, AW or W was offered and not accepted",
}


class KVMU(wiring.Component):
    """KV memory-hierarchy manager: evicts the oldest KV to cluster-contiguous host block chains and prefetches the
    host blocks of a mask's clusters into the device staging area (docs/formats.md §KVMU).

    Members
    -------
    ctrl : In(stream)      one beat per job ``{context, step, restart, buffer, arrive, prefetch}``.
    tokens : In(stream)    the job's arrival descriptors ``{cluster, segment_start, last}`` (when ``arrive``).
    masks : In(stream)     the job's mask beats ``{bits, last}``, bit j of beat k = cluster k·lanes + j.
    resp : Out(stream)     one beat per job ``{tag, causes, address, errors}``.
    dev, host, tbl : Out   AXI4 masters: device tier (ring, staging), host tier (block pool), HC table (device).
    status : Out           the counters of :data:`KVMU_COUNTERS` and ``busy``.
    clear : In(1)          zero the counters (synchronous, while high).

    Latency: a job costs its table accesses (each a round trip on ``tbl``) plus its data, which streams at one beat
    per cycle per port while memories do not stall; the engines are drained (every write acknowledged) between the
    eviction and the prefetch phase and before the response.
    """

    def __init__(self, g: KVMUGeometry, *, constant_fields: bool = True):
        """``constant_fields`` False leaves the constant AXI fields (IDs, sizes, bursts, ``bready``, the data ports'
        strobes) out of the ports, for a parent that ties them itself (the DRE top)."""
        self._g, self._full = g, constant_fields
        self._fe = FrontEnd(g)
        axi = axi4_signature(g.addr_bits, g.data_bits, g.id_bits, constants=constant_fields,
                             strobes=constant_fields)
        tbl = axi4_signature(g.addr_bits, g.data_bits, g.id_bits, constants=constant_fields)
        status = {name: Out(g.counter_bits) for name in KVMU_COUNTERS} | {"busy": Out(1)}
        fe = self._fe.signature.members
        super().__init__({"ctrl": fe["ctrl"], "tokens": fe["tokens"], "masks": fe["masks"], "resp": fe["resp"],
                          "dev": Out(axi), "host": Out(axi), "tbl": Out(tbl), "clear": In(1),
                          "status": Out(wiring.Signature(status))})

    @classmethod
    def from_config(cls, cfg, *, constant_fields: bool = True) -> "KVMU":
        return cls(KVMUGeometry.from_config(cfg), constant_fields=constant_fields)

    @property
    def geometry(self) -> KVMUGeometry:
        return self._g

    def elaborate(self, platform):
        m = Module()
        g = self._g
        m.submodules.frontend = fe = self._fe
        m.submodules.coalescer = co = Coalescer(g)
        m.submodules.legaliser = lg = Legaliser(g)
        m.submodules.engines = en = Engines(g)
        m.submodules.table = tb = TableAccess(g)
        for name in ("ctrl", "tokens", "masks"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(fe, name))
        wiring.connect(m, fe.resp, wiring.flipped(self.resp))
        wiring.connect(m, fe.ranges, co.i)
        wiring.connect(m, co.o, lg.i)
        wiring.connect(m, lg.o, en.i)
        wiring.connect(m, fe.treq, tb.req)
        connect_port(m, en.dev, self.dev)
        connect_port(m, en.host, self.host)
        connect_port(m, tb.tbl, self.tbl)
        if self._full:
            for port in (self.dev, self.host, self.tbl):
                drive_constants(m, port, g.beat_shift, g.beat_bytes, strobes=port is self.tbl)
        m.d.comb += [
            fe.tdone.eq(tb.done), fe.tdata.eq(tb.data), fe.terror.eq(tb.error),
            co.restart.eq(fe.restart), co.base.eq(fe.base), co.limit.eq(fe.limit),
            fe.drained.eq(~co.busy & ~lg.busy & ~lg.o.valid & en.idle),
            fe.drop.eq(co.drop), fe.drop_address.eq(co.drop_address),
            fe.read_error.eq(en.read_error), fe.read_error_address.eq(en.read_error_address),
            fe.write_error.eq(en.write_error), fe.write_error_address.eq(en.write_error_address),
        ]

        st = self.status
        r, resp = fe.ranges, self.resp
        increments = {
            "jobs": fe.job_done,
            "payload_bytes": (r.valid & r.ready & ~r.payload.flush) * r.payload.length,
            "bytes_moved": en.beat_done * g.beat_bytes,
            "bursts": en.burst_done,
            "commands": co.o.valid & co.o.ready,
            "stalls": tb.reads + tb.writes,
            "table_reads": tb.reads,
            "table_writes": tb.writes,
            "errors": (resp.valid & resp.ready) * resp.payload.errors,
            "busy_cycles": fe.busy,
            "port_wait_cycles": en.port_wait,
        }
        m.d.comb += st.busy.eq(fe.busy)
        # increments are registered first (one cycle late), so no handshake path runs into a counter's carry chain
        staged = {name: Signal(Value.cast(inc).shape(), name=f"inc_{name}") for name, inc in increments.items()}
        m.d.sync += [staged[name].eq(inc) for name, inc in increments.items()]
        with m.If(self.clear):
            m.d.sync += [getattr(st, name).eq(0) for name in KVMU_COUNTERS]
        with m.Else():
            m.d.sync += [getattr(st, name).eq(getattr(st, name) + staged[name]) for name in increments]

        return m
