"""HCU and WTU time and energy: cycle formulas, or the RTL figures when the figures flow provides them.

HCU (one token against the open clusters of its context, ``lanes`` codes per cycle, ``bits_per_cycle`` code bits
per lane and cycle; worst case, no early-exit credit)::

    cycles/token = a + b · ⌈n_open / lanes⌉ · hash_bits / bits_per_cycle

WTU (one score row of N clusters, ``lanes`` scores per cycle; one preprocess pass for min / max / Σ s'·count,
then early-exit bucket passes that each rescan the row; W = ⌈N / lanes⌉)::

    cycles/row = a + b · W · passes + c · max(0, passes − 2)        cycles/job += W (count beats)

With figures this is the RTL's cycle model (``vrex.golden.dre.wtu.linear.wtu_row_cycles``: overhead + (2 + P)·W +
P·per_pass_overhead, P refinement / bucket passes): the measured ``mean_passes`` counts every pass over the row,
the load and the mask pass included (P + 2), and only the P selection passes add the measured
``per_row.per_pass_overhead`` c (0 when absent; the load's and the mask's latencies are in ``overhead``). A job (one
context's rows) first reads its W count words.
Without figures: a = ``perf.hcu_token_overhead_cycles`` / ``perf.wtu_row_overhead_cycles``, b = 1, passes =
``perf.wtu_passes_per_row``. With a figures JSON the measured a, b (and the WTU's mean passes) replace them.
Each V-Rex core has its own DRE, and the contexts (stream, KV head) of a layer are spread over the cores, so the
DRE time of a layer is the total cycles / (cores · clock).

With the core's record (``retrieval_path``: the parameters of :mod:`vrex.sim.core.cycle_model`, exact against the
RTL's phase counters) a step's retrieval path is the model's per-phase cycles per context instead (``path_phases``):
the sequencer runs X, H, C, S score, S select, K and R per (stream, KV head), the HCU and WTU inside C and S select
at the cycles above; :func:`vrex.perf.model.simulate_step` times the layer's hash and score with H and S score and the
HCU / WTU tasks with X + C + K + R and S select.

Energy: one HCU code comparison and one WTU score visit (one lane for one cycle) cost ``P / (lanes · f)`` with P
the unit's power at full activity: Table III (per-op values in ``perf.energy``) or the figures' scaled power. The
KVMU moves ``bytes_per_cycle`` (× bus utilisation) per core and cycle when the figures give it (its transfers are
then bounded by cores × that rate × clock) and costs ``P / (bytes_per_cycle · f)`` per byte moved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .figures_input import Figures

__all__ = ["DRETiming", "dre_timing", "FIXED_WTU_PASSES"]

FIXED_WTU_PASSES = 2    # the load and the mask pass of every row; the RTL's per-pass overhead applies to the others


@dataclass(frozen=True)
class DRETiming:
    hcu_overhead: float
    hcu_per_unit: float
    wtu_overhead: float
    wtu_per_unit: float
    wtu_passes: float
    wtu_per_pass_overhead: float
    hcu_pj_per_compare: float
    wtu_pj_per_score: float
    cycles_source: str
    power_source: str
    kvmu_pj_per_byte: float = 0.0
    kvmu_bytes_per_s: float | None = None     # all cores' KVMUs together; None = not bounded
    wtu_row_overlap: bool = False             # what-if, no RTL: rows overlap (vrex.perf.layer_timeline options)
    core_path: tuple | None = None            # the core's retrieval-path cycle model parameters (figures' core record)

    def wtu_row_cycles(self, cfg, row_len: int) -> float:
        """Cycles of one score row of ``row_len`` clusters (the WTU formula or its measured figures)."""
        words = math.ceil(row_len / cfg.dre.wtu.lanes)
        selection = max(0.0, self.wtu_passes - FIXED_WTU_PASSES)
        return self.wtu_overhead + self.wtu_per_unit * words * self.wtu_passes + self.wtu_per_pass_overhead * selection

    def path_phases(self, cfg, *, tokens: int, exits: int, n_open: int, tokens_per_cluster: float, clusters: int):
        """One context's cycles per sequencer phase for a step (:func:`vrex.sim.core.cycle_model.step_phases` with
        the record's parameters; the WTU's rows and the HCU's tokens at this timing's cycles), or None without a
        core record."""
        if self.core_path is None:
            return None
        from vrex.sim.core.cycle_model import step_phases

        h = cfg.dre.hcu
        hcu = self.hcu_overhead + self.hcu_per_unit * math.ceil(n_open / h.lanes) * (cfg.resv.hash_bits //
                                                                                     h.bits_per_cycle)
        return step_phases(dict(self.core_path), tokens=tokens, exits=exits, n_open=n_open,
                           tokens_per_cluster=tokens_per_cluster, clusters=clusters,
                           rows=tokens * cfg.model.group_size, wtu_row_cycles=self.wtu_row_cycles(cfg, clusters),
                           hcu_token_cycles=hcu)

    def hcu_cycles(self, cfg, tokens: float, n_open: int) -> float:
        """Cycles for ``tokens`` tokens, each compared with ``n_open`` open clusters."""
        h = cfg.dre.hcu
        units = math.ceil(n_open / h.lanes) * (cfg.resv.hash_bits // h.bits_per_cycle)
        return tokens * (self.hcu_overhead + self.hcu_per_unit * units)

    def wtu_cycles(self, cfg, rows: float, row_len: int, jobs: float = 0) -> float:
        """Cycles for ``rows`` score rows of ``row_len`` clusters each, in ``jobs`` jobs (each reads its count
        words once)."""
        words = math.ceil(row_len / cfg.dre.wtu.lanes)
        selection = max(0.0, self.wtu_passes - FIXED_WTU_PASSES)
        if self.wtu_row_overlap:
            # what-if (the RTL does not do it): with two accumulator sets and a two-row score buffer the next row
            # loads and bins while this one finishes, so the lane datapath sets the rate, (passes − 1)·W per row
            # (load + refinement passes; the mask pass overlaps), and each job drains its last row once
            drain = self.wtu_overhead + self.wtu_per_pass_overhead * selection + words
            return rows * self.wtu_per_unit * words * max(1.0, self.wtu_passes - 1) + jobs * (words + drain)
        per_row = (self.wtu_overhead + self.wtu_per_unit * words * self.wtu_passes
                   + self.wtu_per_pass_overhead * selection)
        return rows * per_row + jobs * words

    @staticmethod
    def hcu_compares(tokens: float, n_open: int) -> float:
        return tokens * n_open

    def wtu_score_visits(self, cfg, rows: float, row_len: int) -> float:
        """Lane-cycles of score processing (energy): every pass visits every score of the row."""
        return rows * math.ceil(row_len / cfg.dre.wtu.lanes) * cfg.dre.wtu.lanes * self.wtu_passes


def _pj_per_lane_cycle(power_mw: float, lanes: int, clock_mhz: float) -> float:
    return power_mw * 1e-3 / (lanes * clock_mhz * 1e6) * 1e12


def dre_timing(cfg, figures: Figures | None = None) -> DRETiming:
    """The DRE timing and energy model for ``cfg``, from ``figures`` where it has the values."""
    p, e = cfg.perf, cfg.perf.energy
    f = figures
    hcu_measured = f is not None and f.has_hcu_cycles
    wtu_measured = f is not None and f.has_wtu_cycles
    passes_measured = f is not None and f.wtu_mean_passes is not None
    formula = "cycles from the documented formula (no RTL figures)"
    hcu = (f.hcu_overhead, f.hcu_per_unit) if hcu_measured else (float(p.hcu_token_overhead_cycles), 1.0)
    wtu = (f.wtu_overhead, f.wtu_per_unit) if wtu_measured else (float(p.wtu_row_overhead_cycles), 1.0)
    passes = f.wtu_mean_passes if passes_measured else p.wtu_passes_per_row
    parts = [f"HCU cycles from {f.path}" if hcu_measured else f"HCU {formula}",
             f"WTU cycles from {f.path}" if wtu_measured else f"WTU {formula}",
             f"WTU mean passes {passes:g} measured" if passes_measured else
             f"WTU passes per row {passes:g} (perf.wtu_passes_per_row)"]
    target_clock = cfg.technology.target_clock_mhz
    hcu_pj = e.hcu_pj_per_compare
    wtu_pj = e.wtu_pj_per_score
    power = []
    if f is not None and f.hcu_power_mw is not None:
        hcu_pj = _pj_per_lane_cycle(f.hcu_power_mw, cfg.dre.hcu.lanes, f.hcu_clock_mhz or target_clock)
        power.append(f"HCU power {f.hcu_power_mw:g} mW from {f.path}" + (f" ({f.power_method})" if f.power_method
                                                                          else ""))
    else:
        power.append("HCU energy from paper Table III")
    if f is not None and f.wtu_power_mw is not None:
        wtu_pj = _pj_per_lane_cycle(f.wtu_power_mw, cfg.dre.wtu.lanes, f.wtu_clock_mhz or target_clock)
        power.append(f"WTU power {f.wtu_power_mw:g} mW from {f.path}")
    else:
        power.append("WTU energy from paper Table III")
    kvmu_pj, kvmu_rate = e.kvmu_pj_per_byte, None
    rate = f.kvmu_rate_bytes_per_cycle if f is not None else None
    if rate is not None:
        kvmu_rate = rate * cfg.system.cores * cfg.system.clock_mhz * 1e6
        parts.append(f"KVMU {rate:g} B/cycle per core from {f.path}")
    else:
        parts.append("KVMU rate not bounded (no KVMU figures)")
    if f is not None and f.kvmu_power_mw is not None and f.kvmu_bytes_per_cycle:
        kvmu_pj = _pj_per_lane_cycle(f.kvmu_power_mw, f.kvmu_bytes_per_cycle, f.kvmu_clock_mhz or target_clock)
        power.append(f"KVMU power {f.kvmu_power_mw:g} mW from {f.path}")
    else:
        power.append("KVMU energy from paper Table III")
    per_pass = f.wtu_per_pass_overhead if wtu_measured else 0.0
    core_path = f.core_path if f is not None else None
    if core_path is not None:
        parts.append(f"retrieval-path cycles from the core's cycle model ({f.file_of('core')})")
    return DRETiming(hcu[0], hcu[1], wtu[0], wtu[1], passes, per_pass, hcu_pj, wtu_pj, "; ".join(parts),
                     "; ".join(power), kvmu_pj, kvmu_rate, core_path=core_path)
