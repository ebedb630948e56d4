"""DPE: ``lxe.dpe_trees`` MAC trees in lockstep sharing one broadcast operand (docs/formats.md §LXE "DPE")."""

from amaranth import Cat, Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .mac_tree import MacTree, mac_latency
from .parts import Part, part, part_members

__all__ = ["DPE", "dpe_input_layout", "dpe_output_layout"]


def dpe_input_layout(trees, n):
    return data.StructLayout({
        "x": data.ArrayLayout(16, n),                           # broadcast BF16 operand (e.g. an activation row)
        "w": data.ArrayLayout(data.ArrayLayout(16, n), trees),  # per-tree BF16 operands (weight columns)
        "first": 1,
        "last": 1,
    })


def dpe_output_layout(trees):
    return data.StructLayout({"fp32": data.ArrayLayout(32, trees), "bf16": data.ArrayLayout(16, trees)})


class DPE(wiring.Component):
    """Dot-product engine: ``trees`` :class:`~.mac_tree.MacTree` instances fed one shared vector.

    Every tree computes ``x · w[t]`` over the beats of a dot product (``first`` … ``last``); the results of all
    trees appear together. The trees see the same valid and ready, so they stay in lockstep; ``latency`` is the
    tree's. One pass of the broadcast operand yields ``trees`` outputs (one output row of a matmul per pass).

    Members
    -------
    i : In(stream.Signature(dpe_input_layout(trees, n)))
    o : Out(stream.Signature(dpe_output_layout(trees)))
    """

    def __init__(self, *, trees, n, guard_bits=8, headroom_bits=8, cuts=(), external=False):
        self.trees, self.n, self.external = trees, n, external
        args = dict(n=n, guard_bits=guard_bits, headroom_bits=headroom_bits, cuts=cuts)
        self._trees = {f"tree{t}": Part(MacTree, **args) for t in range(trees)}
        self.latency = mac_latency(cuts)
        super().__init__({**self.make_signature(trees=trees, n=n).members, **part_members(self._trees, external)})

    @staticmethod
    def make_signature(*, trees, n, **_):
        return wiring.Signature({"i": In(stream.Signature(dpe_input_layout(trees, n))),
                                 "o": Out(stream.Signature(dpe_output_layout(trees)))})

    @staticmethod
    def config_args(cfg) -> dict:
        x = cfg.lxe
        return dict(trees=x.dpe_trees, n=x.dpe_inputs, guard_bits=x.guard_bits, headroom_bits=x.acc_headroom_bits,
                    cuts=x.mac_cuts)

    @classmethod
    def from_config(cls, cfg, *, external=False):
        return cls(**cls.config_args(cfg), external=external)

    def elaborate(self, platform):
        m = Module()
        trees = [part(m, self, name, sub, self.external) for name, sub in self._trees.items()]
        for t, tree in enumerate(trees):
            m.d.comb += [tree.i.valid.eq(self.i.valid), tree.i.payload.a.eq(self.i.payload.x),
                         tree.i.payload.b.eq(self.i.payload.w[t]), tree.i.payload.first.eq(self.i.payload.first),
                         tree.i.payload.last.eq(self.i.payload.last), tree.o.ready.eq(self.o.ready),
                         self.o.payload.fp32[t].eq(tree.o.payload.fp32), self.o.payload.bf16[t].eq(tree.o.payload.bf16)]
        # the trees are in lockstep (same valid, same ready), so these are all equal; all() keeps every tree's
        # handshake in the design (and in the glue's ports)
        m.d.comb += [self.i.ready.eq(Cat(*(t.i.ready for t in trees)).all()),
                     self.o.valid.eq(Cat(*(t.o.valid for t in trees)).all())]
        return m
