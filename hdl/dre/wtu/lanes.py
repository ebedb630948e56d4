"""Lane-parallel helpers of the WTU datapath: reductions over the valid lanes of a beat and prefix counts."""

from amaranth.hdl import Cat, Const, Mux, Signal, Value, signed

from vrex.hdl.arith import named, popcount, sum_tree

__all__ = ["reduce_tree", "masked_min", "masked_max", "prefix_counts", "lane_valid", "masked_sum",
           "rotate", "register_cut", "clamp"]


def reduce_tree(m, name, values, pick, shape):
    """Balanced tree of 2-input selections ``pick(a, b)``; every level is a named comb signal.

    Amaranth lowers an expression again at every use, and ``pick`` uses each operand twice, so unnamed
    levels would double the logic at every level.
    """
    values = list(values)
    level = 0
    while len(values) > 1:
        nxt = [pick(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        sigs = [Signal(shape, name=f"{name}_l{level}_{i}") for i in range(len(nxt))]
        m.d.comb += [s.eq(v) for s, v in zip(sigs, nxt)]
        if len(values) % 2:
            sigs.append(values[-1])
        values, level = sigs, level + 1
    return values[0]


def masked_min(m, name, values, valid, width):
    """Minimum of the signed ``values`` whose ``valid`` bit is set; the largest ``width``-bit value if none."""
    top = Const((1 << (width - 1)) - 1, signed(width))
    return reduce_tree(m, name, [Mux(v, x, top) for x, v in zip(values, valid)],
                       lambda a, b: Mux(b < a, b, a), signed(width))


def masked_max(m, name, values, valid, width):
    """Maximum of the signed ``values`` whose ``valid`` bit is set; the smallest ``width``-bit value if none."""
    bottom = Const(-(1 << (width - 1)), signed(width))
    return reduce_tree(m, name, [Mux(v, x, bottom) for x, v in zip(values, valid)],
                       lambda a, b: Mux(b > a, b, a), signed(width))


def masked_sum(values, select):
    """Σ values[l] over the lanes whose ``select`` bit is set (balanced adder tree)."""
    return sum_tree([Mux(s, Value.cast(x), 0) for x, s in zip(values, select)])


def prefix_counts(flags):
    """For each lane l, the number of set flags in lanes 0 .. l-1 (lane 0 gets 0)."""
    flags = list(flags)
    return [Const(0, 1)] + [popcount(Cat(*flags[:lane])) for lane in range(1, len(flags))]


def lane_valid(remaining, lanes):
    """Bit l set when lane l holds a cluster: ``remaining`` (clusters from this beat on) > l."""
    return [remaining > lane for lane in range(lanes)]


def rotate(m, name, values, amount, n):
    """``out[i] = values[(i + amount) mod n]`` for a power-of-two ``n``: a log-depth barrel rotator."""
    cur = list(values)
    levels = max(0, (n - 1).bit_length())
    for bit in range(levels):
        step = 1 << bit
        nxt = [Mux(amount[bit], cur[(i + step) % n], cur[i]) for i in range(n)]
        cur = nxt if bit == levels - 1 else [named(m, x, f"{name}_b{bit}_{i}", len(cur[i])) for i, x in enumerate(nxt)]
    return cur


def register_cut(m, name, values: dict, cuts) -> dict:
    """``values`` (name → Value or list of Values) through a register stage if ``name`` is a chosen cut (the
    registers are named ``{name}_{key}`` / ``{name}_{key}{i}``); unchanged otherwise."""
    if name not in cuts:
        return values
    out = {}
    for key, v in values.items():
        if isinstance(v, list):
            regs = [Signal.like(x, name=f"{name}_{key}{i}") for i, x in enumerate(v)]
            m.d.sync += [r.eq(x) for r, x in zip(regs, v)]
            out[key] = regs
        else:
            r = Signal.like(v, name=f"{name}_{key}")
            m.d.sync += r.eq(v)
            out[key] = r
    return out


def clamp(m, name, value, limit):
    """``min(value, limit)`` (unsigned), as a named signal."""
    return named(m, Mux(value > limit, limit, value), name)
