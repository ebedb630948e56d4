"""The lxe and core sections: LLM execution engine (LXEConfig) and retrieval-path sequencer (CoreConfig)."""

from __future__ import annotations

from dataclasses import dataclass

from .fields import _fail, _Section, param


@dataclass(frozen=True)
class LXEConfig(_Section):
    """LLM execution engine of one core (paper §V-A, Table I)."""

    dpe_trees: int = param(64, "N_DPE-h: BF16 MAC trees.", min=1)
    dpe_inputs: int = param(64, "N_DPE-w: inputs per MAC tree.", min=1)
    dpe_weight_words: int = param(
        8, "Stationary weight words per MAC tree (each dpe_inputs BF16): a dot product of up to this many beats runs "
           "against stored weights; a longer one is split into partial sums that the VPE adds.", min=1, max=4096)
    dpe_load_trees: int = param(
        16, "Trees whose weight word one DPE load beat writes: the load port is dpe_load_trees x dpe_inputs BF16 "
            "wide (the compute operand is one vector); must divide dpe_trees.", min=1)
    dpe_weight_banks: int = param(
        2, "SRAM macros side by side that hold a MAC tree's weight memory, each dpe_inputs / dpe_weight_banks BF16 "
           "of a word wide: a macro's access time grows with its width (edge: 1024 bits read in 1.29 ns at 7 nm, 512 "
           "in 0.73 ns), each bank adds a macro's periphery and one read per compute beat; must divide dpe_inputs.",
        min=1, omit_from_hash_at=1)
    dpe_read_stages: int = param(
        1, "Registers between a MAC tree's weight-memory read and the tree's operand ports (the broadcast operand is "
           "delayed beside it): 0 feeds the macro's read data straight into the tree's first stage, 1 gives the "
           "tree a whole cycle; each adds one cycle of DPE latency.", min=0, max=2, omit_from_hash_at=0)
    vpe_units: int = param(1, "N_VPE-h: vector units.", min=1)
    vpe_lanes: int = param(64, "N_VPE-w: lanes per vector unit.", min=1)
    sram_kib: int = param(384, "On-chip LXE memory (KiB).", min=1)
    sram_banks: int = param(16, "SRAM banks (read in parallel as one line of sram_banks x sram_word_bits bits).",
                            min=1)
    sram_word_bits: int = param(64, "Word width of one SRAM bank (bits).", min=8, max=1024)
    guard_bits: int = param(
        8, "Fraction bits kept below the largest term when a MAC tree or VPE lane aligns its terms to the block's "
           "maximum exponent (docs/formats.md §LXE); smaller terms are floored there.", min=0, max=32)
    acc_headroom_bits: int = param(
        8, "Integer headroom of the MAC-tree and VPE accumulators: 2^bits beats can be accumulated without overflow.",
        min=1, max=24)
    mac_cuts: tuple[int, ...] = param(
        (4, 7, 8, 10, 12, 14), "Pipeline registers of a MAC tree: cut c registers the boundary before front level c "
                               "(levels: 0 product, 1..K max-exponent tree, K+1 alignment, K+2..2K+1 adder tree, "
                               "2K+2 the accumulator; K = log2 dpe_inputs); the accumulator, normaliser and output "
                               "registers are always there.", min=1)
    mac_norm_stages: int = param(
        1, "Cycles of a MAC tree's normaliser between its accumulator and output registers: 1 (|S|, leading-zero "
           "count and shift in one cycle), 2 (a register after the count) or 3 (also after |S|); each adds one "
           "cycle of latency per dot product.", min=1, max=3, omit_from_hash_at=1)
    vpe_stages: int = param(
        6, "Pipeline stages of a VPE lane, its latency in cycles: 4 (decode to alignment, add or accumulate, "
           "normalise, round and convert); 5 adds a register between rounding and the conversion to fixed point "
           "and 2^x, 6 also one after the decode and multiply, 7 also one inside the normaliser.", min=4, max=7,
        omit_from_hash_at=4)

    def _check(self):
        n = self.dpe_inputs
        if n < 2 or n & (n - 1):
            _fail("lxe.dpe_inputs", n, "must be a power of two ≥ 2 (each MAC tree is a balanced binary tree).")
        if n % self.dpe_weight_banks:
            _fail("lxe.dpe_weight_banks", self.dpe_weight_banks,
                  f"must divide lxe.dpe_inputs ({n}): each bank holds the same number of a word's BF16 elements.")
        if self.dpe_trees % self.dpe_load_trees:
            _fail("lxe.dpe_load_trees", self.dpe_load_trees,
                  f"must divide lxe.dpe_trees ({self.dpe_trees}): a load beat writes one whole group of trees.")
        depth = 2 * (n.bit_length() - 1) + 2
        for c in self.mac_cuts:
            if c > depth:
                _fail("lxe.mac_cuts", list(self.mac_cuts),
                      f"cut {c} is beyond the tree depth: a {n}-input MAC tree has front levels 0..{depth - 1} "
                      f"(cut {depth} registers the adder-tree root), so cuts must be 1..{depth}.")
        if list(self.mac_cuts) != sorted(set(self.mac_cuts)):
            _fail("lxe.mac_cuts", list(self.mac_cuts), "must be strictly increasing (each cut once).")
        line = self.sram_banks * self.sram_word_bits
        if (self.sram_kib * 8192) % line:
            _fail("lxe.sram_kib", self.sram_kib,
                  f"does not divide into lxe.sram_banks ({self.sram_banks}) banks of lxe.sram_word_bits "
                  f"({self.sram_word_bits})-bit words; pick sizes whose product divides {self.sram_kib} KiB.")

    @property
    def macs_per_cycle(self) -> int:
        return self.dpe_trees * self.dpe_inputs

    @property
    def tree_levels(self) -> int:
        """K = log2(dpe_inputs): levels of the max-exponent and adder trees."""
        return self.dpe_inputs.bit_length() - 1

    @property
    def sram_words(self) -> int:
        """Words per SRAM bank."""
        return self.sram_kib * 8192 // (self.sram_banks * self.sram_word_bits)

    @property
    def lanes(self) -> int:
        """VPE lanes in total (vpe_units x vpe_lanes), all working in lockstep."""
        return self.vpe_units * self.vpe_lanes


@dataclass(frozen=True)
class CoreConfig(_Section):
    """The V-Rex core's retrieval-path sequencer (docs/formats.md §Core)."""

    score_fifo_depth: int = param(
        8, "VPE result beats of the score passes held before their SRAM write; the sequencer keeps at most this "
           "many in flight (a credit), so the DPE and VPE never wait on the SRAM port the writes share with the "
           "operand reads.", min=2, max=64)
    memory_bank_bits: int = param(
        256, "Widest SRAM macro of the sequencer's memories: a wider one (the score FIFO, lxe.dpe_trees x 32 bits; "
             "the candidate list, dre.wtu.lanes entries) is built of side-by-side banks of at most this many bits, "
             "since a macro's access time grows with its width (edge: a 2048-bit FIFO word read in 2.4 ns at 7 nm); "
             "0 keeps every memory one macro.", min=0, omit_from_hash_at=0)
