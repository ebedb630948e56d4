"""Small arithmetic building blocks shared by the DRE components."""

from amaranth.hdl import Cat, Const, Value, unsigned

__all__ = ["popcount", "sum_tree"]


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
