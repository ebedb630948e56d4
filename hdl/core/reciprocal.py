"""BF16 reciprocal of a cluster count (built inline): 1/c rounded once to BF16 (RNE), the scale of a mean key.

For c = 2^e the result is exact. Otherwise a restoring division of 2^(e+1) by c (e = ⌊log₂ c⌋) yields the
significand 1.f₁…f₇, a round bit and a sticky bit in 8 cycles; rounding to nearest even may carry into the exponent.
The result is 2^−(e+1) · 1.f (exponent field 126 − e, or 127 − e after a carry). ``start`` latches ``count``;
``done`` is high from the cycle the result is ready until the next ``start``. Golden:
:func:`vrex.golden.core.numerics.recip_bf16`.
"""

from amaranth import Cat, Module, Mux, Signal

__all__ = ["Reciprocal", "RECIPROCAL_CYCLES"]

RECIPROCAL_CYCLES = 10      # start to done, at most


class Reciprocal:
    def __init__(self, m: Module, name: str, count_bits: int):
        self.start = Signal(name=f"{name}_start")
        self.count = Signal(count_bits, name=f"{name}_count")
        self.done = Signal(name=f"{name}_done")
        self.result = Signal(16, name=f"{name}_result")
        c = Signal(count_bits, name=f"{name}_c")
        e = Signal(range(count_bits + 1), name=f"{name}_e")
        rem = Signal(count_bits + 1, name=f"{name}_rem")
        q = Signal(8, name=f"{name}_q")            # f1..f7 and the round bit, MSB first
        i = Signal(range(9), name=f"{name}_i")
        busy = Signal(name=f"{name}_busy")
        # e = floor(log2(count)): a priority encoder on the input
        top = Signal(range(count_bits + 1), name=f"{name}_top")
        for b in range(count_bits):
            with m.If(self.count[b]):
                m.d.comb += top.eq(b)
        pow2 = (self.count & (self.count - 1)) == 0
        with m.If(self.start):
            m.d.sync += [c.eq(self.count), e.eq(top), i.eq(0), self.done.eq(0)]
            with m.If(pow2):
                m.d.sync += [self.result.eq((127 - top) << 7), self.done.eq(1), busy.eq(0)]
            with m.Else():
                m.d.sync += [rem.eq((1 << (top + 1)) - self.count), busy.eq(1)]
        with m.Elif(busy):
            with m.If(i < 8):
                two = Cat(0, rem)[:count_bits + 1]
                bit = two >= c
                m.d.sync += [rem.eq(Mux(bit, two - c, two)), q.eq(Cat(bit, q[:7])), i.eq(i + 1)]
            with m.Else():
                mant, guard, sticky = Cat(q[1:], 1), q[0], rem != 0       # 1.f1..f7 (8 bits), round bit
                up = guard & (sticky | mant[0])
                rounded = mant + up                   # 9 bits: a carry into bit 8 makes the significand 1.0
                carry = rounded[8]
                m.d.sync += [self.result.eq(Cat(Mux(carry, 0, rounded[:7]), (126 - e + carry)[:8], 0)),
                             self.done.eq(1), busy.eq(0)]
