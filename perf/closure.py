"""What would close a gap to the paper: the single parameter value at which the model meets one of its numbers.

For a paper number (a V-Rex frame latency or TPOT at some KV size and batch) and one config key, ``solve`` finds by
bisection the value in a stated range at which the model's number equals the paper's (every metric here is monotone
in every key used: tests check the monotonicity in ratio, bandwidth and capacity). The answer is ``None`` when no
value in the range reaches it, which is itself the finding ("no ratio closes it").

``PLAUSIBLE`` states, per key, the range a value must fall in to be believable and why; a closing value outside it
is reported as implausible.
"""

from __future__ import annotations

from dataclasses import dataclass

from vrex.errors import ConfigError

from .dre_timing import dre_timing
from .model import simulate_step, vrex_system
from .policies import policies
from .workload import decode_step, frame_step

__all__ = ["Gap", "solve", "metric", "PLAUSIBLE", "plausibility"]

# key -> (lo, hi, why) of believable values
PLAUSIBLE = {
    "perf.vrex.dram_efficiency": (0.6, 0.95, "streaming LLM decoders reach 0.72–0.77 of DRAM peak on GPUs "
                                             "(gpt-fast on A100, TinyChat on AGX Orin: vrex.perf.validation); an "
                                             "LPU-style streaming engine may reach more, a DRAM controller with refresh "
                                             "and row misses not all"),
    "perf.vrex.dpe_efficiency": (0.5, 1.0, "the vision tower and the prefill are large GEMMs (577 vision tokens; "
                                           "4096-wide layers) that a 64 x 64 MAC-tree array keeps busy once its "
                                           "weights stream at the DRAM rate; the LXE's measured efficiency (figures) "
                                           "replaces this judgement"),
    "perf.frame_ratio": (0.042, 0.44, "paper Fig. 20: ReSV retrieves 4.2–44.0% per layer; Table II averages "
                                      "25.1–36.1% per task"),
    "perf.reuse_fraction": (0.0, 0.9, "the share of a frame's selection still staged from the previous frame; the "
                                      "paper does not report it"),
}


@dataclass(frozen=True)
class Gap:
    name: str
    kind: str         # frame | decode
    kv: int
    batch: int
    paper_ms: float


def metric(cfg, gap: Gap, measured=None, figures=None) -> float:
    """V-Rex's latency (ms) of the gap's step on ``cfg``."""
    dre = dre_timing(cfg, figures)
    system = vrex_system(cfg, policies(cfg, measured), figures=figures,
                         kvmu=measured.kvmu() if measured is not None else None)
    step = (frame_step if gap.kind == "frame" else decode_step)(cfg, gap.kv, gap.batch)
    return simulate_step(cfg, system, step, dre).latency * 1e3


def solve(cfg, gap: Gap, key: str, lo: float, hi: float, *, measured=None, figures=None, integer: bool = False,
          iterations: int = 40):
    """The value of ``key`` in [lo, hi] at which the model meets ``gap.paper_ms``, or None if none does.

    Values the config rejects count as out of range (the search stays inside the valid part of [lo, hi]).
    """
    base = cfg.with_overrides({"perf.kv_sizes": [gap.kv], "perf.batches": [gap.batch]})

    def f(x):
        v = int(round(x)) if integer else x
        try:
            return metric(base.with_overrides({key: v}), gap, measured, figures) - gap.paper_ms
        except ConfigError:
            return None

    flo, fhi = f(lo), f(hi)
    if flo is None or fhi is None or flo * fhi > 0:
        return None
    for _ in range(iterations):
        mid = (lo + hi) / 2
        fm = f(mid)
        if fm is None:
            return None
        if (fm > 0) == (flo > 0):
            lo, flo = mid, fm
        else:
            hi = mid
    value = (lo + hi) / 2
    return int(round(value)) if integer else value


def plausibility(key: str, value) -> tuple[bool | None, str]:
    """(plausible?, reason) of a closing value; None when the key has no stated range."""
    if value is None or key not in PLAUSIBLE:
        return None, ""
    lo, hi, why = PLAUSIBLE[key]
    return lo <= value <= hi, f"{lo:g}–{hi:g}: {why}"
