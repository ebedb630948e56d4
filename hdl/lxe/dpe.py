"""DPE: ``lxe.dpe_trees`` MAC trees in lockstep, each with its own stationary weight memory, sharing one broadcast
operand (docs/formats.md §LXE "DPE")."""

from amaranth import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .mac_tree import MacTree, mac_latency
from .parts import Part, part, part_members

__all__ = ["DPE", "dpe_input_layout", "dpe_output_layout", "dpe_latency"]


def _bits(count):
    return max(1, (count - 1).bit_length())


def dpe_input_layout(trees, n, words, load_trees):
    """One beat of the DPE's only input stream: a weight load or a compute beat (``load`` says which)."""
    return data.StructLayout({
        "load": 1,                                                  # 1: write weights, 0: compute
        "group": _bits(trees // load_trees),                        # load: trees group·L … group·L + L − 1
        "mask": load_trees,                                         # load: which trees of the group are written
        "addr": _bits(words),                                       # the weight word (load: written; compute: read)
        "data": data.ArrayLayout(data.ArrayLayout(16, n), load_trees),  # load: a word per tree; compute: x = data[0]
        "first": 1,                                                 # compute: first beat of a dot product
        "last": 1,                                                  # compute: last beat (the results are emitted)
    })


def dpe_output_layout(trees):
    return data.StructLayout({"fp32": data.ArrayLayout(32, trees), "bf16": data.ArrayLayout(16, trees)})


def dpe_latency(cuts, norm_stages):
    """Cycles from a last compute beat's handshake to its results: the weight read, then the tree's latency."""
    return mac_latency(cuts, norm_stages) + 1


class DPE(wiring.Component):
    """Dot-product engine: ``trees`` :class:`~.mac_tree.MacTree` instances, each beside a weight memory of
    ``words`` words of ``n`` BF16 (weight-stationary), fed one broadcast vector.

    One input stream carries both kinds of beat, in order:

    * a **load** beat writes ``data[k]`` into word ``addr`` of tree ``group · load_trees + k`` for every ``k`` set in
      ``mask`` (``load_trees`` trees per beat: the load port's width is a parameter, the compute path's is not);
    * a **compute** beat reads word ``addr`` of every tree and gives the trees the pairs (``data[0]``, word):
      tree t accumulates ``x · w_t[addr]`` over the beats ``first`` … ``last`` of a dot product.

    A compute beat sees every load accepted before it (the memories are written at the load's handshake and read
    at the compute beat's, one cycle later at the earliest). A dot product of more than ``words`` beats is split by
    the user into partial sums (docs/formats.md). The trees see the same valid and ready, so they stay in
    lockstep; all ``trees`` results appear together, ``latency`` = the tree's + 1 (the weight read register)
    cycles after a last beat's handshake, one beat per cycle otherwise (load or compute, back to back).
    Back-pressure: ``i.ready = ~staged | trees ready`` for both kinds of beat.

    Members
    -------
    i : In(stream.Signature(dpe_input_layout(trees, n, words, load_trees)))
    o : Out(stream.Signature(dpe_output_layout(trees)))
    """

    def __init__(self, *, trees, n, words=8, load_trees=1, guard_bits=8, headroom_bits=8, cuts=(), norm_stages=1,
                 external=False):
        if trees % load_trees:
            raise ValueError(f"load_trees ({load_trees}) must divide trees ({trees})")
        self.trees, self.n, self.words, self.load_trees, self.external = trees, n, words, load_trees, external
        args = dict(n=n, guard_bits=guard_bits, headroom_bits=headroom_bits, cuts=cuts, norm_stages=norm_stages)
        self._trees = {f"tree{t}": Part(MacTree, **args) for t in range(trees)}
        self.latency = dpe_latency(cuts, norm_stages)
        super().__init__({**self.make_signature(trees=trees, n=n, words=words, load_trees=load_trees).members,
                          **part_members(self._trees, external)})

    @staticmethod
    def make_signature(*, trees, n, words=8, load_trees=1, **_):
        return wiring.Signature({"i": In(stream.Signature(dpe_input_layout(trees, n, words, load_trees))),
                                 "o": Out(stream.Signature(dpe_output_layout(trees)))})

    @staticmethod
    def config_args(cfg) -> dict:
        x = cfg.lxe
        return dict(trees=x.dpe_trees, n=x.dpe_inputs, words=x.dpe_weight_words, load_trees=x.dpe_load_trees,
                    guard_bits=x.guard_bits, headroom_bits=x.acc_headroom_bits, cuts=x.mac_cuts,
                    norm_stages=x.mac_norm_stages)

    @classmethod
    def from_config(cls, cfg, *, external=False):
        return cls(**cls.config_args(cfg), external=external)

    def elaborate(self, platform):
        m = Module()
        trees = [part(m, self, name, sub, self.external) for name, sub in self._trees.items()]
        p, L = self.i.payload, self.load_trees
        # the trees are in lockstep (same valid, same ready), so these are all equal; all() keeps every tree's
        # handshake in the design (and in the glue's ports)
        trees_ready = Signal(name="trees_ready")
        m.d.comb += [trees_ready.eq(Cat(*(t.i.ready for t in trees)).all()),
                     self.o.valid.eq(Cat(*(t.o.valid for t in trees)).all())]
        staged = Signal(name="staged")                      # a compute beat waits in the read register
        x = Signal(data.ArrayLayout(16, self.n), name="staged_x")
        first, last = Signal(name="staged_first"), Signal(name="staged_last")
        take = Signal(name="take")
        m.d.comb += [self.i.ready.eq(~staged | trees_ready), take.eq(self.i.valid & self.i.ready)]
        with m.If(take & ~p.load):
            m.d.sync += [staged.eq(1), x.eq(p.data[0]), first.eq(p.first), last.eq(p.last)]
        with m.Elif(trees_ready):
            m.d.sync += staged.eq(0)
        for t, tree in enumerate(trees):
            m.submodules[f"weights{t}"] = mem = Memory(shape=16 * self.n, depth=self.words, init=[])
            wr, rd = mem.write_port(), mem.read_port()
            mine = (p.group == t // L) if self.trees > L else 1
            # a read port holds its data while not enabled: a stalled staged beat keeps its weights
            m.d.comb += [wr.en.eq(take & p.load & mine & p.mask[t % L]), wr.addr.eq(p.addr),
                         wr.data.eq(p.data[t % L]), rd.en.eq(take & ~p.load), rd.addr.eq(p.addr)]
            m.d.comb += [tree.i.valid.eq(staged), tree.i.payload.a.eq(x), tree.i.payload.b.eq(rd.data),
                         tree.i.payload.first.eq(first), tree.i.payload.last.eq(last), tree.o.ready.eq(self.o.ready),
                         self.o.payload.fp32[t].eq(tree.o.payload.fp32), self.o.payload.bf16[t].eq(tree.o.payload.bf16)]
        return m
