"""The LXE's on-chip SRAM: ``lxe.sram_banks`` banks of ``lxe.sram_words`` words of ``lxe.sram_word_bits`` bits,
read and written as one line (all banks at one address, a bank mask on writes)."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["LxeSram", "sram_command_layout", "sram_data_layout"]


def sram_command_layout(banks, words, word_bits):
    return data.StructLayout({
        "write": 1,                              # 1: write `data` to the banks in `mask`; 0: read the line
        "addr": range(words),
        "data": data.ArrayLayout(word_bits, banks),
        "mask": banks,
    })


def sram_data_layout(banks, word_bits):
    return data.StructLayout({"data": data.ArrayLayout(word_bits, banks)})


class LxeSram(wiring.Component):
    """Banked SRAM: each bank is an ``amaranth.lib.memory`` memory with one synchronous read port and one write
    port (the figures flow maps each bank to an SRAM macro).

    Members
    -------
    cmd : In(stream)     ``{write, addr, data[banks], mask}``, executed in order, one per cycle.
    rdata : Out(stream)  ``{data[banks]}``: the line of each read command, the cycle after it was taken; a stalled
                         ``rdata`` stalls ``cmd`` (``cmd.ready = ~rdata.valid | rdata.ready``).
    """

    def __init__(self, *, banks, words, word_bits):
        self.banks, self.words, self.word_bits = banks, words, word_bits
        super().__init__({"cmd": In(stream.Signature(sram_command_layout(banks, words, word_bits))),
                          "rdata": Out(stream.Signature(sram_data_layout(banks, word_bits)))})

    @classmethod
    def from_config(cls, cfg):
        x = cfg.lxe
        return cls(banks=x.sram_banks, words=x.sram_words, word_bits=x.sram_word_bits)

    def elaborate(self, platform):
        m = Module()
        take = Signal()
        c = self.cmd.payload
        m.d.comb += [self.cmd.ready.eq(~self.rdata.valid | self.rdata.ready), take.eq(self.cmd.valid & self.cmd.ready)]
        for b in range(self.banks):
            mem = m.submodules[f"bank{b}"] = Memory(shape=self.word_bits, depth=self.words, init=[])
            wp, rp = mem.write_port(), mem.read_port(domain="sync")
            m.d.comb += [wp.addr.eq(c.addr), wp.data.eq(c.data[b]), wp.en.eq(take & c.write & c.mask[b]),
                         rp.addr.eq(c.addr), rp.en.eq(take & ~c.write),
                         self.rdata.payload.data[b].eq(Mux(self.rdata.valid, rp.data, 0))]   # no X before a read
        with m.If(take & ~c.write):
            m.d.sync += self.rdata.valid.eq(1)
        with m.Elif(self.rdata.ready):
            m.d.sync += self.rdata.valid.eq(0)
        return m
