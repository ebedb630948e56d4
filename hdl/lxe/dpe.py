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


def dpe_latency(cuts, norm_stages, read_stages=0):
    """Cycles from a last compute beat's handshake to its results: the weight read, ``read_stages`` registers after
    it (``lxe.dpe_read_stages``), then the tree's latency."""
    return mac_latency(cuts, norm_stages) + 1 + read_stages


# Trees that share one copy of the broadcast operand's last register (and its valid, first and last bits): one
# register driving the operand ports of all 64 edge trees took 0.70 ns at 7 nm (ASAP7) to charge their load.
BROADCAST_FANOUT = 8


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
    lockstep; all ``trees`` results appear together, ``latency`` = the tree's + 1 (the weight read) +
    ``read_stages`` (registers between the read and the trees) cycles after a last beat's handshake, one beat per
    cycle otherwise (load or compute, back to back). Each weight memory is ``banks`` SRAM macros side by side
    (a narrower macro reads faster). The operand registers move together: ``i.ready`` = the last stage is empty or
    the trees are ready, for both kinds of beat. The last stage's broadcast operand is one register per
    :data:`BROADCAST_FANOUT` trees, each stalled by its own trees' ready (equal to the others' in lockstep).

    Members
    -------
    i : In(stream.Signature(dpe_input_layout(trees, n, words, load_trees)))
    o : Out(stream.Signature(dpe_output_layout(trees)))
    """

    def __init__(self, *, trees, n, words=8, load_trees=1, guard_bits=8, headroom_bits=8, cuts=(), norm_stages=1,
                 banks=1, read_stages=0, external=False):
        if trees % load_trees:
            raise ValueError(f"load_trees ({load_trees}) must divide trees ({trees})")
        if n % banks:
            raise ValueError(f"banks ({banks}) must divide n ({n})")
        self.trees, self.n, self.words, self.load_trees, self.external = trees, n, words, load_trees, external
        self.banks, self.read_stages = banks, read_stages
        args = dict(n=n, guard_bits=guard_bits, headroom_bits=headroom_bits, cuts=cuts, norm_stages=norm_stages)
        self._trees = {f"tree{t}": Part(MacTree, **args) for t in range(trees)}
        self.latency = dpe_latency(cuts, norm_stages, read_stages)
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
                    norm_stages=x.mac_norm_stages, banks=x.dpe_weight_banks, read_stages=x.dpe_read_stages)

    @classmethod
    def from_config(cls, cfg, *, external=False):
        return cls(**cls.config_args(cfg), external=external)

    def hierarchy_parts(self) -> dict:
        return dict(self._trees)

    def elaborate(self, platform):
        m = Module()
        trees = [part(m, self, name, sub, self.external) for name, sub in self._trees.items()]
        p, L, S, n = self.i.payload, self.load_trees, self.read_stages, self.n
        groups = [range(g, min(g + BROADCAST_FANOUT, self.trees)) for g in range(0, self.trees, BROADCAST_FANOUT)]
        m.d.comb += self.o.valid.eq(Cat(*(t.o.valid for t in trees)).all())
        # stage 0 is the weight read, stages 1..S registers after it; the last stage is one copy per group of trees
        valid = [Signal(name=f"stage{s}_valid") for s in range(S)]
        x = [Signal(data.ArrayLayout(16, n), name=f"stage{s}_x") for s in range(S)]
        fl = [Signal(2, name=f"stage{s}_first_last") for s in range(S)]
        g_valid = [Signal(name=f"group{g}_valid") for g in range(len(groups))]
        g_x = [Signal(data.ArrayLayout(16, n), name=f"group{g}_x") for g in range(len(groups))]
        g_fl = [Signal(2, name=f"group{g}_first_last") for g in range(len(groups))]
        # each group stalls by its own trees' ready (the trees are in lockstep, so every group moves together);
        # i.ready is all groups' move
        g_move = [Signal(name=f"group{g}_move") for g in range(len(groups))]
        move, take = Signal(name="move"), Signal(name="take")
        for g, ts in enumerate(groups):
            m.d.comb += g_move[g].eq(~g_valid[g] | Cat(*(trees[t].i.ready for t in ts)).all())
        m.d.comb += [move.eq(Cat(*g_move).all()), self.i.ready.eq(move), take.eq(self.i.valid & move)]
        compute = take & ~p.load
        src_valid, src_x, src_fl = compute, p.data[0], Cat(p.first, p.last)
        for s in range(S):
            with m.If(move):
                m.d.sync += valid[s].eq(src_valid)
                with m.If(src_valid):
                    m.d.sync += [x[s].eq(src_x), fl[s].eq(src_fl)]
            src_valid, src_x, src_fl = valid[s], x[s], fl[s]
        for g in range(len(groups)):
            with m.If(g_move[g]):
                m.d.sync += g_valid[g].eq(src_valid)
                with m.If(src_valid):
                    m.d.sync += [g_x[g].eq(src_x), g_fl[g].eq(src_fl)]
        k = n // self.banks
        for t, tree in enumerate(trees):
            g = t // BROADCAST_FANOUT
            mine = (p.group == t // L) if self.trees > L else 1
            read = []
            for b in range(self.banks):
                name = f"weights{t}" if self.banks == 1 else f"weights{t}_{b}"
                m.submodules[name] = mem = Memory(shape=16 * k, depth=self.words, init=[])
                wr, rd = mem.write_port(), mem.read_port()
                # a read port holds its data while not enabled: a stalled beat keeps its weights
                m.d.comb += [wr.en.eq(take & p.load & mine & p.mask[t % L]), wr.addr.eq(p.addr),
                             wr.data.eq(p.data[t % L].as_value()[16 * k * b:16 * k * (b + 1)]), rd.en.eq(compute),
                             rd.addr.eq(p.addr)]
                read.append(rd.data)
            w = Cat(*read)
            for s in range(S):          # the weights of stage s move to stage s + 1 with the beat
                reg = Signal(16 * n, name=f"tree{t}_w{s + 1}")
                with m.If((move if s < S - 1 else g_move[g]) & valid[s]):
                    m.d.sync += reg.eq(w)
                w = reg
            # a tree's o.ready matters only while its o.valid is high (its pipeline advances when ~o.valid): the
            # gate gives each port its own driver instead of one input wired to every tree
            m.d.comb += [tree.i.valid.eq(g_valid[g]), tree.i.payload.a.eq(g_x[g]), tree.i.payload.b.eq(w),
                         tree.i.payload.first.eq(g_fl[g][0]), tree.i.payload.last.eq(g_fl[g][1]),
                         tree.o.ready.eq(self.o.ready | ~tree.o.valid),
                         self.o.payload.fp32[t].eq(tree.o.payload.fp32), self.o.payload.bf16[t].eq(tree.o.payload.bf16)]
        return m
