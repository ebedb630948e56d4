"""A test-only component with hierarchy and a memory, to exercise the figures flow (never registered in hdl/).

``MemStage`` (top) = ``lookup`` (a read-modify-write memory of ``depth`` words, synchronous read) followed by
``post`` (adds one, registered). For every input transaction ``{write, addr, data}`` the output is the value the
memory held at ``addr`` before the transaction, plus one (mod 2^width); ``write`` stores ``data`` at ``addr``.
"""

import random

from amaranth import Module, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.sim.bench import StreamBench, leaf_fields, pack


def request_layout(width, depth):
    return data.StructLayout({"write": 1, "addr": (depth - 1).bit_length(), "data": width})


def value_layout(width):
    return data.StructLayout({"value": width})


class Lookup(wiring.Component):
    def __init__(self, width, depth):
        self._width, self._depth = width, depth
        super().__init__({"i": In(stream.Signature(request_layout(width, depth))),
                          "o": Out(stream.Signature(value_layout(width)))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = memory.Memory(shape=self._width, depth=self._depth, init=[])
        rd, wr = mem.read_port(transparent_for=()), mem.write_port()
        accept = self.i.valid & self.i.ready
        m.d.comb += [self.i.ready.eq(~self.o.valid | self.o.ready), rd.addr.eq(self.i.payload.addr), rd.en.eq(accept),
                     wr.addr.eq(self.i.payload.addr), wr.data.eq(self.i.payload.data),
                     wr.en.eq(accept & self.i.payload.write), self.o.payload.value.eq(rd.data)]
        with m.If(self.i.ready):
            m.d.sync += self.o.valid.eq(self.i.valid)
        return m


class PlusOne(wiring.Component):
    def __init__(self, width):
        super().__init__({"i": In(stream.Signature(value_layout(width))), "o": Out(stream.Signature(value_layout(width)))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.value.eq(self.i.payload.value + 1)]
        return m


class MemStage(wiring.Component):
    def __init__(self, width, depth):
        self._width, self._depth = width, depth
        super().__init__({"i": In(stream.Signature(request_layout(width, depth))),
                          "o": Out(stream.Signature(value_layout(width)))})

    @classmethod
    def from_config(cls, cfg):
        return cls(cfg.resv.hash_bits, cfg.hcu_capacity)

    def elaborate(self, platform):
        m = Module()
        m.submodules.lookup = lookup = Lookup(self._width, self._depth)
        m.submodules.post = post = PlusOne(self._width)
        wiring.connect(m, wiring.flipped(self.i), lookup.i)
        wiring.connect(m, lookup.o, post.i)
        wiring.connect(m, post.o, wiring.flipped(self.o))
        return m


def golden(requests, width, depth):
    mem, out = [0] * depth, []
    for r in requests:
        out.append((mem[r["addr"]] + 1) % (1 << width))
        if r["write"]:
            mem[r["addr"]] = r["data"]
    return out


def make_bench(cfg, *, n=200, seed=1, p_valid=0.7, p_ready=0.7, reference=golden, jobs=None, write_rate=0.5):
    if jobs is not None:
        raise ValueError("the test component takes random stimulus only")
    width, depth = cfg.resv.hash_bits, cfg.hcu_capacity
    rng = random.Random(seed)
    reqs = [{"write": int(rng.random() < write_rate), "addr": rng.randrange(depth), "data": rng.getrandbits(width)}
            for _ in range(n)]
    layout = request_layout(width, depth)
    return StreamBench(name="memstage", inputs={"i": [pack(layout, r) for r in reqs]},
                       expected={"o": [pack(value_layout(width), {"value": v}) for v in reference(reqs, width, depth)]},
                       fields={"o": leaf_fields(value_layout(width))},
                       p_valid=p_valid, p_ready=p_ready, seed=seed)


class WideEnable(wiring.Component):
    """A ``width``-bit register bank without reset (as a memory's words) loaded when a 4-bit counter wraps: one
    enable net for every bit (the flow must see that net's load)."""

    def __init__(self, width):
        self._width = width
        super().__init__({"d": In(width), "q": Out(width)})

    @classmethod
    def from_config(cls, cfg):
        return cls(16 * cfg.resv.hash_bits)

    def elaborate(self, platform):
        m = Module()
        count, bank = Signal(4), Signal(self._width, reset_less=True)
        m.d.sync += count.eq(count + 1)
        with m.If(count == 15):
            m.d.sync += bank.eq(self.d)
        m.d.comb += self.q.eq(bank)
        return m
