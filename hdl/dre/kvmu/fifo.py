"""FIFOs built inline in the module that uses them (a ``lib.fifo`` submodule, or a FIFO with enable signals of its
own, leaves unused alias wires in the Verilog, docs/lint.md): a first-word-fall-through queue on a memory with an
asynchronous read (small control queues, flip-flops) or with a synchronous read whose output register is the head
(the data buffer: an SRAM macro in the figures flow, "every read port synchronous")."""

from amaranth import Module, Mux, Signal
from amaranth.lib.memory import Memory, ReadPort, WritePort
from amaranth.utils import ceil_log2

__all__ = ["Fifo"]


class Fifo:
    """``r_data``, ``r_rdy`` (the head, first word falls through), ``w_rdy`` and ``empty`` are available after
    construction; :meth:`connect` then takes the push enable, the pushed word and the pop enable as expressions
    (a push happens when ``w_en & w_rdy``, a pop when ``r_en & r_rdy``). The synchronous flavour shows a pushed
    word at the head two cycles later; both hold ``depth`` words."""

    def __init__(self, m: Module, name: str, width: int, depth: int, *, synchronous: bool = False):
        if depth < 2:
            raise ValueError("a FIFO holds at least 2 words")
        self._m, self._depth, self._sync = m, depth, synchronous
        m.submodules[name] = mem = Memory(shape=width, depth=depth, init=[])
        # ports named after the FIFO (``buffer_rd__addr``): the default names come from the attribute (``_rd``), the
        # same in every FIFO of a module, and Verilator leaves names that start with "_" out of its waveforms
        addr_width = ceil_log2(depth)
        self._wr = WritePort(WritePort.Signature(shape=width, addr_width=addr_width), memory=mem, domain="sync",
                             path=(f"{name}_wr",))
        self._rd = ReadPort(ReadPort.Signature(shape=width, addr_width=addr_width), memory=mem,
                            domain="sync" if synchronous else "comb", path=(f"{name}_rd",))
        self._stored = Signal(range(depth + 1), name=f"{name}_stored")     # words in the memory, not at the head
        self.r_data = self._rd.data
        if synchronous:
            self._head = Signal(name=f"{name}_head")
            self.r_rdy = self._head
            self.w_rdy = self._stored + self._head < depth
            self.empty = (self._stored < 1) & ~self._head
        else:
            self.r_rdy = self._stored > 0
            self.w_rdy = self._stored < depth
            self.empty = self._stored < 1

    def connect(self, *, w_en, w_data, r_en) -> None:
        m, depth, wr, rd = self._m, self._depth, self._wr, self._rd
        push = w_en & self.w_rdy
        m.d.comb += [wr.data.eq(w_data), wr.en.eq(push)]
        with m.If(push):
            m.d.sync += wr.addr.eq(_next(wr.addr, depth))       # the port's address is the write pointer
        pop = r_en & self.r_rdy
        if not self._sync:
            with m.If(pop):
                m.d.sync += rd.addr.eq(_next(rd.addr, depth))   # the read port's address is the read pointer
            m.d.sync += self._stored.eq(self._stored + push - pop)
            return
        fetch = (self._stored > 0) & (~self._head | pop)
        m.d.comb += rd.en.eq(fetch)
        with m.If(fetch):
            m.d.sync += [rd.addr.eq(_next(rd.addr, depth)), self._head.eq(1)]
        with m.Elif(pop):
            m.d.sync += self._head.eq(0)
        m.d.sync += self._stored.eq(self._stored + push - fetch)


def _next(p, depth):
    """The pointer after ``p`` (a power-of-two depth wraps by truncation)."""
    if depth & (depth - 1) == 0:
        return (p + 1)[:len(p)]
    return Mux(p == depth - 1, 0, p + 1)
