"""A memory read port (synchronous) played as a stream of its words at consecutive addresses (built inline).

``start`` (a pulse) begins at address ``first`` for ``count`` words (both read with ``start`` only); the words come out at ``valid`` / ``data`` /
``ready`` in order, one per cycle while ``ready`` is high; ``index`` is the word number of the one at the output and
``done`` is high once every word has been taken (until the next ``start``). The read port's enable is the stream's
advance, so a stalled word is held by the port itself."""

from amaranth import Module, Signal

__all__ = ["ReadStream"]


class ReadStream:
    def __init__(self, m: Module, name: str, port, depth: int):
        self.start = Signal(name=f"{name}_start")
        self.first = Signal(range(depth + 1), name=f"{name}_first")
        self.count = Signal(range(depth + 1), name=f"{name}_count")
        self.valid, self.ready = Signal(name=f"{name}_valid"), Signal(name=f"{name}_ready")
        self.data = port.data
        self.index = Signal(range(depth + 1), name=f"{name}_index")     # of the word at the output
        self.done = Signal(name=f"{name}_done")
        addr, issued = Signal(range(depth + 1), name=f"{name}_addr"), Signal(range(depth + 1), name=f"{name}_issued")
        active = Signal(name=f"{name}_active")
        count = Signal.like(self.count, name=f"{name}_held_count")     # ``count`` is only valid with ``start``
        advance = ~self.valid | self.ready
        more = active & (issued < count)
        m.d.comb += [port.addr.eq(addr), port.en.eq(advance & more), self.done.eq(~active & ~self.valid)]
        with m.If(self.valid & self.ready):
            m.d.sync += self.index.eq(self.index + 1)
        with m.If(advance):
            m.d.sync += self.valid.eq(more)
            with m.If(more):
                m.d.sync += [addr.eq(addr + 1), issued.eq(issued + 1)]
            with m.Else():
                m.d.sync += active.eq(0)
        with m.If(self.start):
            m.d.sync += [addr.eq(self.first), count.eq(self.count), issued.eq(0), active.eq(1), self.valid.eq(0),
                         self.index.eq(0)]
