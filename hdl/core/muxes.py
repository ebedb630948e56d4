"""Variable-index selects written as multiplexers over constant slices (a variable ``word_select`` becomes a wide
shift and a truncation in the Verilog, which lint rejects; docs/lint.md)."""

from amaranth import Cat, Signal
from amaranth.hdl import Value

__all__ = ["select", "onehot", "assign_part"]


def select(m, value, index, width: int, name: str, count: int | None = None):
    """Part ``index`` of ``value`` cut into ``width``-bit parts, as a named signal (0 for an index out of range);
    with one part, the part itself (a named signal driven by a slice of a ``Cat`` would be an unused alias wire in
    the Verilog, docs/lint.md)."""
    value = Value.cast(value)
    count = len(value) // width if count is None else count
    if count == 1:
        return value[:width]
    out = Signal(width, name=name)
    with m.Switch(index):
        for k in range(count):
            with m.Case(k):
                m.d.comb += out.eq(value[k * width:(k + 1) * width])
    return out


def onehot(index, n: int):
    """``n`` bits, bit k set when ``index == k``."""
    return Cat(*(index == k for k in range(n))) if n > 1 else Value.cast(1)


def assign_part(m, domain: str, target, index, width: int, value) -> None:
    """``target``'s part ``index`` (of ``width`` bits) takes ``value`` in the domain named ``domain``."""
    count = len(target) // width
    if count == 1:
        m.d[domain] += target[:width].eq(value)
        return
    with m.Switch(index):
        for k in range(count):
            with m.Case(k):
                m.d[domain] += target[k * width:(k + 1) * width].eq(value)
