"""Small arithmetic building blocks shared by the DRE components."""

from amaranth.hdl import Cat, Const, Signal, Value, unsigned

__all__ = ["named", "popcount", "sum_tree"]


def named(m, value, name, shape=None):
    """``value`` through a comb signal ``name`` of ``shape`` (default: the expression's own shape), so the netlist
    shares the signal instead of copying the expression. A signal narrower than its driver would become an unused
    alias wire of a slice in the generated Verilog."""
    sig = Signal(Value.cast(value).shape() if shape is None else shape, name=name)
    m.d.comb += sig.eq(value)
    return sig


def sum_tree(values):
    """Balanced adder tree: depth ceil(log2(n)) adders, each only as wide as its operands need."""
    values = [Value.cast(v) for v in values]
    if not values:
        return Const(0, unsigned(1))
    while len(values) > 1:
        nxt = [values[i] + values[i + 1] for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            nxt.append(values[-1])
        values = nxt
    return values[0]


def popcount(value):
    """Number of ones in ``value`` as a balanced tree of adders (width: bit_length of the input width)."""
    value = Value.cast(value)
    width = len(value).bit_length()
    return sum_tree([value[i] for i in range(len(value))])[:width] if len(value) else Cat(Const(0, 1))
