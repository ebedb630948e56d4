"""Stimulus and golden expectations for the DRE top (hdl/dre/top.py): the HCU and WTU benches side by side.

The DRE's streams are the blocks' own, so its bench is the union of an HCU bench and a WTU bench with the ports
renamed to the DRE's (independent random traffic on every port), plus the expected final values of the status
counters, computed from the same golden outputs and the HCU's cycle model (early-exit strobes).
"""

from __future__ import annotations

import random

from vrex.golden.dre.hcu.reference import hcu_assign, hcu_cycles_for
from vrex.golden.dre.wtu.linear import select_row

from vrex.sim.dre import hcu as hcu_bench
from vrex.sim.dre.wtu import bench as wtu_bench
from vrex.sim.bench import StreamBench, unpack

__all__ = ["JOB_KIND", "make_bench", "expected_counters", "PORTS"]

JOB_KIND = "both"    # make_bench(jobs=(hcu_jobs, wtu_jobs)) replays recorded jobs of both blocks

PORTS = {"i": "codes", "o": "assignments",                                    # HCU bench port -> DRE port
         "counts": "counts", "scores": "scores", "row": "rows", "group": "selection"}   # WTU bench port -> DRE port

# The DRE top's KVMU ports (hdl/dre/top.py): its job streams and its three AXI4 master buses.
KVMU_PORTS = ("kvmu_ctrl", "kvmu_tokens", "kvmu_masks", "kvmu_resp", "dev", "host", "tbl")


def _rename(d: dict) -> dict:
    return {PORTS.get(k, k): v for k, v in d.items()}


def expected_counters(cfg, hcu_jobs, threshold, hb: StreamBench, wb: StreamBench) -> dict:
    """Final values of the DRE status counters for a run of these benches (None: traffic-dependent)."""
    from vrex.hdl.dre.wtu.layouts import WTUGeometry, wtu_group_layout, wtu_row_layout

    lout = hcu_bench.output_layout(cfg)
    assigns = [unpack(lout, v) for v in hb.expected["o"]]
    timings = [t for job in hcu_jobs
               for t in hcu_cycles_for(cfg, job.open_codes, job.token_codes, threshold=threshold).tokens]
    g = WTUGeometry.from_config(cfg)
    rows = [r for r in (unpack(wtu_row_layout(g), v) for v in wb.expected["row"]) if r["last"]]
    jobs = sum(unpack(wtu_group_layout(g), v)["last"] for v in wb.expected["group"])
    mask = (1 << cfg.dre.counter_bits) - 1
    counters = {
        "cycles": None, "hcu_busy_cycles": None, "wtu_active_cycles": None,
        "hcu_tokens": len(assigns),
        "hcu_new_clusters": sum(a["new"] and not a["full"] for a in assigns),
        "hcu_full_events": sum(a["full"] for a in assigns),
        "hcu_group_exits": sum(t.group_exits for t in timings),
        "hcu_scan_stops": sum(t.scan_stop for t in timings),
        "wtu_rows": len(rows),
        "wtu_jobs": jobs,
        "wtu_selected": sum(r["selected"] for r in rows),
        "wtu_buckets_walked": sum(r["buckets_walked"] for r in rows),
        "wtu_errors": sum(r["error"] for r in rows),
    }
    return {f"status__{k}": (v & mask if v is not None else None) for k, v in counters.items()}


def make_bench(cfg, *, n: int = 200, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, jobs=None,
               reference_hcu=hcu_assign, reference_wtu=select_row, name: str = "dre") -> StreamBench:
    """HCU and WTU stimulus in one bench: random jobs of about ``n`` tokens / ``n`` WTU beats, or ``jobs =
    (hcu_jobs, wtu_jobs)`` recorded from a session. Each block's expected outputs come from its reference."""
    rng = random.Random(seed)
    threshold = cfg.resv.hamming_threshold
    hcu_jobs, wtu_jobs = jobs if jobs is not None else (None, None)
    if hcu_jobs is None:
        hcu_jobs = hcu_bench.random_hcu_jobs(cfg, n, rng, threshold=threshold)
    if wtu_jobs is None:
        wtu_jobs = wtu_bench.random_wtu_jobs(cfg, n, seed)
    hcu_jobs, wtu_jobs = list(hcu_jobs), list(wtu_jobs)
    hb = hcu_bench.make_bench(cfg, seed=seed, p_valid=p_valid, p_ready=p_ready, reference=reference_hcu,
                              jobs=hcu_jobs, threshold=threshold)
    wb = wtu_bench.make_bench(cfg, seed=seed, p_valid=p_valid, p_ready=p_ready, reference=reference_wtu,
                              jobs=wtu_jobs)
    return StreamBench(
        name=name, inputs=_rename({**hb.inputs, **wb.inputs}), expected=_rename({**hb.expected, **wb.expected}),
        fields=_rename({**hb.fields, **wb.fields}), statics={**hb.statics, **wb.statics, "clear": 0},
        expected_signals=expected_counters(cfg, hcu_jobs, threshold, hb, wb),
        # the KVMU gets no command in this bench: its streams and AXI ports stay idle (tests/dre/test_dre.py runs it
        # against the golden memory model)
        idle_inputs=list(KVMU_PORTS),
        p_valid=p_valid, p_ready=p_ready, seed=seed, max_cycles=hb.cycle_budget() + wb.cycle_budget())


def measure_cycles(cfg, *, cycles_of=None) -> dict:
    """The blocks' cycle figures: the DRE top re-exports the HCU and WTU streams and adds no cycle
    (tests/dre/test_dre.py checks that every handshake of a no-stall DRE run lands on the cycle of the block run).
    ``cycles_of(part)``: the part's figures measured already (the figures flow's), else they are measured here."""
    hcu, wtu = (cycles_of(p) for p in ("hcu", "wtu")) if cycles_of else (hcu_bench.measure_cycles(cfg),
                                                                          wtu_bench.measure_cycles(cfg))
    return {"component": "dre", "config": cfg.name, "config_hash": cfg.hash(),
            "per_token": hcu["per_token"], "per_row": wtu["per_row"], "mean_passes": wtu.get("mean_passes"),
            "added_latency_cycles": 0, "hcu": hcu, "wtu": wtu,
            "formula": "HCU: " + hcu["formula"] + " | WTU: " + wtu["formula"]}
