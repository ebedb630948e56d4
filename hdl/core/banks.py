"""Memories built of side-by-side banks (built inline): one wide word is stored across several narrower memories
that share the address and the enables, so each becomes a narrower SRAM macro in the figures flow (a macro's access
time grows with its width; ``core.memory_bank_bits``).

:func:`banked_memory` returns a write and a read port with the fields of ``amaranth.lib.memory`` ports (``addr``,
``data``, ``en``; ``en`` of the write port has one bit per granule), wired to every bank. The read port's ``en``
is 0 unless driven (unlike a plain read port, whose enable is 1 unless driven); its data is held while it is 0.
:class:`BankedFifo` is a synchronous :class:`~vrex.hdl.dre.kvmu.fifo.Fifo` per bank, pushed and popped together
(their identical pointers are one set of flip-flops after synthesis).
"""

from types import SimpleNamespace

from amaranth import Cat, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.hdl import Shape

from vrex.hdl.dre.kvmu.fifo import Fifo

__all__ = ["banked_memory", "BankedFifo"]


def _cuts(width, per_bank):
    return list(zip(range(0, width, per_bank), list(range(per_bank, width, per_bank)) + [width]))


def banked_memory(m, name: str, shape, depth: int, bank_bits: int, granularity: int | None = None):
    """``(write port, read port)`` of a ``depth``-word memory of ``shape``, split into banks of at most
    ``bank_bits`` bits (whole granules of ``granularity`` bits each when given; 0: one bank)."""
    width = Shape.cast(shape).width
    gran = granularity or width
    if width % gran:
        raise ValueError(f"{name}: granularity {gran} does not divide the width {width}")
    per_bank = max(1, bank_bits // gran) * gran if bank_bits > 0 else width     # whole granules, at least one
    cuts = _cuts(width, per_bank)
    addr_bits = max(1, (depth - 1).bit_length())
    wr = SimpleNamespace(addr=Signal(addr_bits, name=f"{name}_w_addr"), data=Signal(shape, name=f"{name}_w_data"),
                         en=Signal(width // gran if granularity else 1, name=f"{name}_w_en"))
    rd = SimpleNamespace(addr=Signal(addr_bits, name=f"{name}_r_addr"), en=Signal(name=f"{name}_r_en"))
    datas = []
    for k, (lo, hi) in enumerate(cuts):
        bank = f"{name}{k}" if len(cuts) > 1 else name
        m.submodules[bank] = mem = Memory(shape=hi - lo, depth=depth, init=[])
        w = mem.write_port(granularity=gran) if granularity else mem.write_port()
        r = mem.read_port()
        m.d.comb += [w.addr.eq(wr.addr), w.data.eq(wr.data.as_value()[lo:hi]), r.addr.eq(rd.addr), r.en.eq(rd.en),
                     w.en.eq(wr.en[lo // gran:hi // gran] if granularity else wr.en)]
        datas.append(r.data)
    # the read data is the banks' data as an expression (a named signal driven by a Cat is an unused alias wire)
    rd.data = data.View(shape, Cat(*datas)) if isinstance(shape, data.Layout) else Cat(*datas)
    return wr, rd


class BankedFifo:
    """The interface of a synchronous :class:`Fifo` (``r_data``, ``r_rdy``, ``w_rdy``, ``empty``, :meth:`connect`)
    over ``width``-bit words kept in banks of at most ``bank_bits`` bits (0: one bank)."""

    def __init__(self, m, name: str, width: int, depth: int, bank_bits: int):
        cuts = _cuts(width, bank_bits if bank_bits > 0 else width)
        self._cuts = cuts
        self._fifos = [Fifo(m, f"{name}{k}" if len(cuts) > 1 else name, hi - lo, depth, synchronous=True)
                       for k, (lo, hi) in enumerate(cuts)]
        head = self._fifos[0]
        self.r_rdy, self.w_rdy, self.empty = head.r_rdy, head.w_rdy, head.empty
        self.r_data = Cat(*(f.r_data for f in self._fifos))

    def connect(self, *, w_en, w_data, r_en) -> None:
        for f, (lo, hi) in zip(self._fifos, self._cuts):
            f.connect(w_en=w_en, w_data=w_data[lo:hi], r_en=r_en)
