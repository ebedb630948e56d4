"""A stream width converter built inline in the module that uses it (no submodule, so no alias wires in the
Verilog): words of ``in_bits`` become words of ``out_bits`` (one width divides the other), LSB first — the low part
of a wide word is the first narrow word, the first narrow word the low part of a wide one (little-endian byte order
of AXI beats, lane 0 in the low bits of the LXE's vectors)."""

from amaranth import Module, Signal

from .muxes import assign_part, select

__all__ = ["Resize"]


class Resize:
    """``i_valid`` / ``i_data`` / ``i_ready`` in, ``o_valid`` / ``o_data`` / ``o_ready`` out (drive ``i_valid``,
    ``i_data`` and ``o_ready``). Full throughput; a wide output word is registered, a split keeps the input word in a
    register and hands out its parts; equal widths pass through."""

    def __init__(self, m: Module, name: str, in_bits: int, out_bits: int):
        if in_bits % out_bits and out_bits % in_bits:
            raise ValueError(f"{name}: {in_bits} and {out_bits} bits do not divide each other")
        self.i_valid, self.i_ready = Signal(name=f"{name}_i_valid"), Signal(name=f"{name}_i_ready")
        self.i_data = Signal(in_bits, name=f"{name}_i_data")
        self.o_valid, self.o_ready = Signal(name=f"{name}_o_valid"), Signal(name=f"{name}_o_ready")
        self.o_data = Signal(out_bits, name=f"{name}_o_data")
        if in_bits == out_bits:
            m.d.comb += [self.o_valid.eq(self.i_valid), self.o_data.eq(self.i_data), self.i_ready.eq(self.o_ready)]
            self.busy = self.o_valid          # an expression: a word partly collected or partly handed out
            return
        k = max(in_bits, out_bits) // min(in_bits, out_bits)
        word = Signal(max(in_bits, out_bits), name=f"{name}_word")
        count = Signal(range(k), name=f"{name}_count")
        full = Signal(name=f"{name}_full")
        i_take, o_take = self.i_valid & self.i_ready, self.o_valid & self.o_ready
        if in_bits > out_bits:            # split: hand out the parts of the held word
            last = count == k - 1
            m.d.comb += [self.o_valid.eq(full), self.o_data.eq(select(m, word, count, out_bits, f"{name}_part")),
                         self.i_ready.eq(~full | (self.o_ready & last))]
            self.busy = full
            with m.If(o_take):
                m.d.sync += count.eq(count + 1)
                with m.If(last):
                    m.d.sync += [count.eq(0), full.eq(0)]
            with m.If(i_take):
                m.d.sync += [word.eq(self.i_data), full.eq(1)]
        else:                              # merge: collect k parts, then hand out the word
            m.d.comb += [self.o_valid.eq(full), self.o_data.eq(word), self.i_ready.eq(~full | self.o_ready)]
            self.busy = full | (count != 0)
            with m.If(o_take):
                m.d.sync += full.eq(0)
            with m.If(i_take):
                assign_part(m, "sync", word, count, in_bits, self.i_data)
                m.d.sync += count.eq(count + 1)
                with m.If(count == k - 1):
                    m.d.sync += [count.eq(0), full.eq(1)]
