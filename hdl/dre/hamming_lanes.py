"""Hamming lane array: ``lanes`` parallel XOR + popcount comparators against a threshold."""

from amaranth import Module, Cat
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.arith import popcount

__all__ = ["HammingLanes", "hamming_lanes_input_layout", "hamming_lanes_output_layout"]


def hamming_lanes_input_layout(code_bits, lanes):
    distance_bits = code_bits.bit_length()
    return data.StructLayout({
        "query": code_bits,
        "refs": data.ArrayLayout(code_bits, lanes),
        "ref_valid": lanes,
        "threshold": distance_bits + 1,   # code_bits + 1 must be representable: it accepts every code
    })


def hamming_lanes_output_layout(code_bits, lanes):
    return data.StructLayout({
        "distance": data.ArrayLayout(code_bits.bit_length(), lanes),
        "below": lanes,
    })


class HammingLanes(wiring.Component):
    """Compare one query code with ``lanes`` reference codes in one cycle.

    For lane ``k``: ``distance[k] = popcount(query ^ refs[k])`` and
    ``below[k] = ref_valid[k] & (distance[k] < threshold)`` (strict: a distance equal to the threshold does not
    join, as in ReSV's "< Th_hd"). Distances are reported for invalid lanes too.

    Parameters
    ----------
    code_bits : int
        Code width (``resv.hash_bits``).
    lanes : int
        Parallel comparators (``dre.hcu.lanes``).

    Members
    -------
    i : In(stream.Signature(hamming_lanes_input_layout))
    o : Out(stream.Signature(hamming_lanes_output_layout))

    Latency is one cycle (registered output); throughput one transaction per cycle. ``i.ready`` is
    ``~o.valid | o.ready``, so any back-pressure pattern is tolerated without loss or duplication.
    """

    def __init__(self, code_bits, lanes):
        if code_bits < 1 or lanes < 1:
            raise ValueError(f"code_bits ({code_bits}) and lanes ({lanes}) must be ≥ 1")
        self._code_bits, self._lanes = code_bits, lanes
        super().__init__({
            "i": In(stream.Signature(hamming_lanes_input_layout(code_bits, lanes))),
            "o": Out(stream.Signature(hamming_lanes_output_layout(code_bits, lanes))),
        })

    @classmethod
    def from_config(cls, cfg):
        return cls(cfg.resv.hash_bits, cfg.dre.hcu.lanes)

    @property
    def code_bits(self):
        return self._code_bits

    @property
    def lanes(self):
        return self._lanes

    def elaborate(self, platform):
        m = Module()
        p = self.i.payload
        distances = [popcount(p.query ^ p.refs[k]) for k in range(self._lanes)]
        below = Cat(p.ref_valid[k] & (distances[k] < p.threshold) for k in range(self._lanes))

        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += self.o.valid.eq(self.i.valid)
            with m.If(self.i.valid):
                m.d.sync += self.o.payload.below.eq(below)
                m.d.sync += [self.o.payload.distance[k].eq(distances[k]) for k in range(self._lanes)]
        return m
