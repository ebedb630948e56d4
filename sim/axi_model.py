"""An AXI4 memory slave for amaranth.sim testbenches (the cocotb benches use cocotbext-axi's ``AxiRam``).

:class:`AxiSlave` serves one AXI4 port of a design from a shared :class:`bytearray`: INCR bursts of full-width beats,
any number of outstanding bursts answered in order, byte strobes, OKAY responses with the request's ID, and random
pauses on every channel (each channel's ready / valid is withheld with probability ``p_pause``). It is clocked by
the testbench: :meth:`drive` before an edge sets the slave's outputs, :meth:`signals` lists what the testbench
samples at the edge, :meth:`edge` takes the sampled values and updates the slave.
"""

from __future__ import annotations

import random
from collections import deque

__all__ = ["AxiSlave"]

_MASTER = ("awid", "awaddr", "awlen", "awvalid", "wdata", "wstrb", "wlast", "wvalid", "bready",
           "arid", "araddr", "arlen", "arvalid", "rready")


class AxiSlave:
    def __init__(self, port, mem: bytearray, *, beat_bytes: int, rng: random.Random, p_pause: float = 0.0):
        self.port, self.mem, self.beat, self.rng, self.p = port, mem, beat_bytes, rng, p_pause
        self.reads: deque = deque()        # [id, address, beats left]
        self.writes: deque = deque()       # [id, address, beats left]
        self.responses: deque = deque()    # B ids
        self.out = {"arready": 0, "rvalid": 0, "awready": 0, "wready": 0, "bvalid": 0}
        self.bursts = {"read": 0, "write": 0}
        self.protocol: list[str] = []

    def _go(self) -> int:
        return int(self.rng.random() >= self.p)

    def signals(self) -> list:
        return [getattr(self.port, name) for name in _MASTER]

    def drive(self, ctx) -> None:
        p, o = self.port, self.out
        o["arready"], o["awready"] = self._go(), self._go()
        o["rvalid"] = int(bool(self.reads) and self._go())
        if o["rvalid"]:
            rid, addr, left = self.reads[0]
            ctx.set(p.rdata, int.from_bytes(self.mem[addr:addr + self.beat], "little"))
            ctx.set(p.rlast, int(left == 1))
            ctx.set(p.rid, rid)
            ctx.set(p.rresp, 0)
        o["wready"] = int(bool(self.writes) and self._go())
        o["bvalid"] = int(bool(self.responses) and self._go())
        if o["bvalid"]:
            ctx.set(p.bid, self.responses[0])
            ctx.set(p.bresp, 0)
        for name, value in o.items():
            ctx.set(getattr(p, name), value)

    def edge(self, values, cycle: int) -> None:
        v = dict(zip(_MASTER, values))
        o = self.out
        if o["rvalid"] and v["rready"]:
            burst = self.reads[0]
            burst[1] += self.beat
            burst[2] -= 1
            if burst[2] == 0:
                self.reads.popleft()
        if o["wready"] and v["wvalid"]:
            burst = self.writes[0]
            addr, strb, word = burst[1], v["wstrb"], v["wdata"]
            for k in range(self.beat):
                if strb >> k & 1:
                    self.mem[addr + k] = word >> (8 * k) & 0xFF
            burst[1] += self.beat
            burst[2] -= 1
            if bool(v["wlast"]) != (burst[2] == 0) and len(self.protocol) < 10:
                self.protocol.append(f"cycle {cycle}: WLAST {v['wlast']} with {burst[2]} beats left")
            if burst[2] == 0:
                self.responses.append(self.writes.popleft()[0])
        if o["bvalid"] and v["bready"]:
            self.responses.popleft()
        for kind, queue in (("ar", self.reads), ("aw", self.writes)):
            if o[f"{kind}ready"] and v[f"{kind}valid"]:
                addr, beats = v[f"{kind}addr"], v[f"{kind}len"] + 1
                if (addr & 0xFFF) + beats * self.beat > 4096 and len(self.protocol) < 10:
                    self.protocol.append(f"cycle {cycle}: {kind.upper()} {addr:#x} x {beats} beats crosses 4 KiB")
                if addr + beats * self.beat > len(self.mem) and len(self.protocol) < 10:
                    self.protocol.append(f"cycle {cycle}: {kind.upper()} {addr:#x} x {beats} beats beyond the memory")
                    addr = 0
                queue.append([v[f"{kind}id"], addr, beats])
                self.bursts["read" if kind == "ar" else "write"] += 1
