"""Geometry and stream payload layouts of the WTU (WiCSum threshold unit).

The layouts are the contract between the WTU, its producers (the LXE's score stream, the HC-table count
stream), its consumers (the KVMU's selection input) and the testbenches (which pack stimulus with them).
docs/formats.md §WTU describes every field; hdl/dre/wtu/linear.py describes the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import signed, unsigned
from amaranth.lib import data

from vrex.errors import ConfigError

__all__ = ["WTUGeometry", "wtu_counts_layout", "wtu_scores_layout", "wtu_row_layout", "wtu_group_layout",
           "TRANSFORMS", "MODES"]

TRANSFORMS = ("shift_min", "relu", "exp2")
MODES = ("early_exit", "histogram", "topk")


@dataclass(frozen=True)
class WTUGeometry:
    """Every width and size of a WTU instance, derived from the config (or given directly in tests).

    Parameters
    ----------
    lanes : int
        Scores (and counts) per beat and per cycle (``dre.wtu.lanes``).
    mode : str
        ``early_exit``, ``histogram`` or ``topk`` (``dre.wtu.mode``; a generate-time choice).
    buckets : int
        WiCSum buckets; in ``topk`` mode ``2**floor(log2(buckets))`` bins per refinement pass.
    score_bits, count_bits, ratio_bits : int
        Signed score width B, unsigned count width C, ratio fraction bits R.
    capacity : int
        Clusters per row (score memory words x lanes); a multiple of ``lanes``.
    transform : str
        ``shift_min``, ``relu`` or ``exp2`` (``resv.score_transform``; unused in ``topk`` mode). ``exp2`` builds
        the exp2 datapath (:class:`vrex.hdl.dre.wtu.exp.ExpWTU`, ``histogram`` mode only).
    frac_bits, bucket_octaves, lut_entries, mantissa_bits, refine_passes, refine_bins, fill : exp2 format
        (``dre.wtu.score_frac_bits`` and the ``dre.wtu`` exp2 fields; docs/formats.md §WTU exp2).
    pipeline_stages : int
        exp2: register stages of the lane datapath between the memory-capture register and the bin
        accumulators (``dre.wtu.pipeline_stages``, 1 to 7; see :data:`vrex.hdl.dre.wtu.exp.STAGE_CUTS`).
    threshold_mass : str
        exp2: ``offloaded`` (the ratio is a share of the offloaded clusters' mass) or ``row`` (``resv.threshold_mass``:
        p is a share of the row's mass with the resident window's; the score beats carry the per-row resident
        input, docs/formats.md §WTU row mass).
    resident_sum_bits : int
        ``row``: Z, the width of the resident-mass sum input (``dre.wtu.resident_sum_bits``), 1 ≤ Z ≤ mass_bits.
    """

    lanes: int
    mode: str
    buckets: int
    score_bits: int
    count_bits: int
    ratio_bits: int
    capacity: int
    transform: str = "shift_min"
    frac_bits: int = 0
    bucket_octaves: int = 2
    lut_entries: int = 1
    mantissa_bits: int = 12
    refine_passes: int = 0
    refine_bins: int = 16
    fill: str = "bucket"
    pipeline_stages: int = 6
    threshold_mass: str = "offloaded"
    resident_sum_bits: int = 24

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.transform not in TRANSFORMS:
            raise ValueError(f"score transform {self.transform!r} has no integer form in the WTU "
                             f"(supported: {', '.join(TRANSFORMS)})")
        if self.lanes < 1 or self.capacity < self.lanes or self.capacity % self.lanes:
            raise ValueError(f"capacity ({self.capacity}) must be a positive multiple of lanes ({self.lanes})")
        if self.buckets < 2 or self.score_bits < 2 or self.count_bits < 1 or self.ratio_bits < 1:
            raise ValueError("buckets ≥ 2, score_bits ≥ 2, count_bits ≥ 1 and ratio_bits ≥ 1 are required")
        if self.transform == "exp2" and self.mode != "topk":
            if self.mode != "histogram":
                raise ValueError("the exp2 transform bins while the row loads: it needs histogram mode")
            if self.bin_shift >= self.score_bits or self.refine_passes * self.digit_bits_exp > self.bin_shift:
                raise ValueError(f"a bin of 2^{self.bin_shift} score units does not fit {self.score_bits}-bit scores "
                                 f"or {self.refine_passes} refinement passes of {self.digit_bits_exp} bits")
            if self.fill != "bucket":
                raise ValueError("the WTU RTL fills the final bin whole (dre.wtu.exit_fill: bucket); greedy is "
                                 "golden-only")
            if not 1 <= self.pipeline_stages <= 7:
                raise ValueError(f"pipeline_stages ({self.pipeline_stages}) must be 1..7")
        if self.threshold_mass not in ("offloaded", "row"):
            raise ValueError(f"threshold_mass {self.threshold_mass!r} is not offloaded or row")
        if self.threshold_mass == "row":
            if not self.exp2:
                raise ValueError("threshold_mass row needs the exp2 transform in histogram mode")
            if not 1 <= self.resident_sum_bits <= self.mass_bits:
                raise ValueError(f"resident_sum_bits ({self.resident_sum_bits}) must be 1..{self.mass_bits} (the "
                                 "row-sum accumulator's width)")

    @classmethod
    def from_config(cls, cfg) -> "WTUGeometry":
        """Geometry of ``cfg.dre.wtu``; a transform the RTL cannot implement is a ConfigError."""
        w = cfg.dre.wtu
        transform = cfg.resv.score_transform
        if transform not in TRANSFORMS and w.mode != "topk":
            raise ConfigError("resv.score_transform", transform,
                              "has no integer form, so the WTU cannot implement it; use shift_min or relu "
                              "(exp is for the float golden model only).")
        if transform == "exp2" and w.mode != "topk" and w.exit_fill != "bucket":
            raise ConfigError("dre.wtu.exit_fill", w.exit_fill,
                              "is golden-only: the WTU RTL takes the final (sub-)bin whole; use bucket.")
        return cls(lanes=w.lanes, mode=w.mode, buckets=w.buckets, score_bits=w.score_bits, count_bits=w.count_bits,
                   ratio_bits=w.ratio_bits, capacity=w.row_capacity,
                   transform=transform if transform in TRANSFORMS else "shift_min",
                   frac_bits=w.score_frac_bits, bucket_octaves=w.bucket_octaves, lut_entries=w.exp_lut_entries,
                   mantissa_bits=w.exp_mantissa_bits, refine_passes=w.refine_passes, refine_bins=w.refine_bins,
                   fill=w.exit_fill, pipeline_stages=w.pipeline_stages,
                   threshold_mass=cfg.resv.threshold_mass if transform == "exp2" and w.mode != "topk" else "offloaded",
                   resident_sum_bits=w.resident_sum_bits)

    # ---- derived sizes ---------------------------------------------------------------------------------------

    @property
    def exp2(self) -> bool:
        """The exp2 datapath (hdl/dre/wtu/exp.py) is built."""
        return self.transform == "exp2" and self.mode != "topk"

    @property
    def row_mass(self) -> bool:
        """exp2 with ``resv.threshold_mass = row``: the score beats carry the per-row resident input."""
        return self.exp2 and self.threshold_mass == "row"

    @property
    def bin_shift(self) -> int:
        """exp2: S, log2 of a bin's width in score units."""
        return self.bucket_octaves.bit_length() - 1 + self.frac_bits

    @property
    def digit_bits_exp(self) -> int:
        """exp2: D, bits of the in-bin position resolved per refinement pass."""
        return self.refine_bins.bit_length() - 1

    @property
    def term_bits(self) -> int:
        """exp2: width of a weight term (count x mantissa << octave in bin)."""
        return self.count_bits + self.mantissa_bits + self.bucket_octaves - 1

    @property
    def mass_bits(self) -> int:
        """exp2: width of a bin mass, a row total and the running sums (cannot overflow over a full row)."""
        return self.term_bits + max(1, (self.capacity - 1).bit_length()) + 1

    @property
    def words(self) -> int:
        """Memory words (beats) of a full row: capacity / lanes."""
        return self.capacity // self.lanes

    @property
    def score_range(self) -> tuple[int, int]:
        """(lowest, highest) score of the signed ``score_bits``-bit format."""
        return -(1 << (self.score_bits - 1)), (1 << (self.score_bits - 1)) - 1

    @property
    def clusters_bits(self) -> int:
        """Width of a cluster count 0 .. capacity (and of the ``clusters`` and ``k`` fields)."""
        return self.capacity.bit_length()

    @property
    def bucket_bits(self) -> int:
        """Width of a bucket index 0 .. buckets-1."""
        return (self.buckets - 1).bit_length()

    @property
    def walked_bits(self) -> int:
        """Width of a walked-bucket count 0 .. buckets."""
        return self.buckets.bit_length()

    @property
    def digit_bits(self) -> int:
        """Bits resolved per top-k refinement pass: floor(log2(buckets))."""
        return self.buckets.bit_length() - 1

    @property
    def topk_bins(self) -> int:
        return 1 << self.digit_bits

    @property
    def product_bits(self) -> int:
        """Unsigned transformed score x count."""
        return self.score_bits + self.count_bits

    @property
    def acc_bits(self) -> int:
        """Unsigned width of a row's Σ s'·c (as ``WTUConfig.acc_bits``)."""
        return self.product_bits + max(1, (self.capacity - 1).bit_length())

    @property
    def count_sum_bits(self) -> int:
        """Unsigned width of Σ c over a row."""
        return self.count_bits + self.clusters_bits

    @property
    def uses_counts(self) -> bool:
        """Only the WiCSum modes store counts; top-k ranks raw scores."""
        return self.mode != "topk"

    def memory_bits(self) -> dict:
        """Bits of each on-chip memory (score, count, aggregated mask)."""
        out = {"score": self.capacity * self.score_bits, "aggregate": self.capacity}
        if self.uses_counts:
            out["count"] = self.capacity * self.count_bits
        return out


def wtu_counts_layout(g: WTUGeometry) -> data.StructLayout:
    """One beat of a job's token counts: ``lanes`` unsigned counts and the job's cluster count N."""
    return data.StructLayout({
        "counts": data.ArrayLayout(unsigned(g.count_bits), g.lanes),   # lane l: tokens of cluster beat·lanes + l
        "clusters": unsigned(g.clusters_bits),                         # N, read from the job's first beat
    })


def wtu_scores_layout(g: WTUGeometry) -> data.StructLayout:
    """One beat of a score row: ``lanes`` signed fixed-point scores; ``last`` marks the job's last row. With
    ``threshold_mass = row`` also the row's resident input ``res_max`` / ``res_sum``, read on the row's first beat
    (ignored on the others; docs/formats.md §WTU row mass)."""
    fields = {
        "scores": data.ArrayLayout(signed(g.score_bits), g.lanes),   # lane l: score of cluster beat·lanes + l
        "last": 1,                                                   # on the final beat of the job's last row
    }
    if g.row_mass:
        fields["res_max"] = signed(g.score_bits)            # largest resident score (the score format)
        fields["res_sum"] = unsigned(g.resident_sum_bits)   # resident total anchored at res_max's bin, saturated
    return data.StructLayout(fields)


def wtu_row_layout(g: WTUGeometry) -> data.StructLayout:
    """One beat of a row's cluster mask, with the row's status."""
    return data.StructLayout({
        "mask": g.lanes,                             # bit l: cluster beat·lanes + l selected (0 beyond N)
        "last": 1,                                   # final beat of the row
        "job_last": 1,                               # on every beat of the job's last row
        "error": 1,                                  # the job was rejected (N = 0 or N > capacity)
        "selected": unsigned(g.clusters_bits),       # clusters selected up to and including this beat
        "exit_bucket": unsigned(g.bucket_bits),      # WiCSum exit bucket (0 in top-k mode)
        "buckets_walked": unsigned(g.walked_bits),   # buckets the WiCSum walk visited (0 in top-k mode)
    })


def wtu_group_layout(g: WTUGeometry) -> data.StructLayout:
    """One beat of the OR-aggregated mask of a job's rows (a GQA group)."""
    return data.StructLayout({
        "mask": g.lanes,   # bit l: cluster beat·lanes + l is in the OR of the job's row masks
        "last": 1,         # final beat of the job's mask
        "error": 1,        # the job was rejected
    })
