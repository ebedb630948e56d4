"""Transfers between the offload tier (NVMe SSD or host DRAM) and device DRAM, and how the layout changes them.

The offload tier is read and written in *units* of ``system.storage.page_bytes`` (NVMe logical blocks; host-memory
read granularity), with at most ``system.storage.max_command_bytes`` per command and at most ``read_iops`` /
``write_iops`` commands per second. The link moves ``link_bw · link_eff`` bytes per second. A transfer therefore
takes::

    t = max( moved / (link_bw · link_eff),  moved / device_bw,  commands / iops )

where *moved* counts whole units. The KV of one layer is stored per (K or V, KV head) as a sequence of token
*slices* of ``head_dim · kv_bytes`` bytes (256 B for Llama-3-8B), in one of these layouts:

``full``
    The whole offloaded region is read as long runs (FlexGen fetches everything).
``token_scattered``
    Token order; every (token, head) slice is selected independently with probability r. A unit of m = page /
    slice tokens is touched with probability 1 − (1 − r)^m; every touched unit costs one command (merging of
    neighbouring touched units is not credited). Slices larger than a unit are their own commands.
``block_contiguous``
    ReKV: one block (``perf.rekv.block_tokens`` tokens, one frame by default) of every KV head is contiguous per
    K or V; a selected block is one run.
``cluster_contiguous``
    V-Rex KVMU: every cluster has a unit-aligned append region per (K or V, head), so a selected cluster is one
    run of ``perf.cluster_run_tokens`` slices.

With KVMU counters from golden sessions (``kvmu`` in ``vrex golden --json``), the cluster-contiguous plan uses the
measured runs instead of ``perf.cluster_run_tokens``: L = token slices per KVMU command, and at least the measured
bytes moved per payload byte (coalescing gaps, partial beats). With KVMU figures the transfer is also bounded by
the KVMUs' rate (``engine_bw``: cores × bytes per cycle × bus utilisation × clock).

A run of L bytes that starts at a random slice boundary spans 1 + (L − s)/g units on average (s = slice bytes,
g = unit bytes, s < g); a unit-aligned run whose length varies in slice steps spans L/g + (1 − s/g)/2; slices of
at least one unit span ⌈s/g⌉ units each. Any plan may instead read the whole
region contiguously; the faster of the two is used, so a dense selection never costs more than a full read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["Transfer", "Link", "read_transfer", "write_transfer"]

Layout = Literal["full", "token_scattered", "block_contiguous", "cluster_contiguous"]


@dataclass(frozen=True)
class Link:
    """The path to the offload tier as one platform sees it."""

    link_bw: float        # B/s
    link_eff: float
    read_bw: float        # device, B/s
    write_bw: float
    read_iops: float
    write_iops: float
    unit_bytes: int
    max_command_bytes: int
    engine_bw: float | None = None    # B/s the DMA engines sustain (V-Rex KVMUs, from figures); None = not bounded

    @classmethod
    def of(cls, cfg, platform, engine_bw: float | None = None) -> "Link":
        st = cfg.system.storage
        return cls(platform.link_bw, platform.link_eff, st.read_gbs * 1e9, st.write_gbs * 1e9, st.read_iops,
                   st.write_iops, st.page_bytes, st.max_command_bytes, engine_bw)


@dataclass(frozen=True)
class Transfer:
    """Bytes and commands of a transfer, and the time they take."""

    payload: float = 0.0      # bytes the policy asked for
    moved: float = 0.0        # bytes moved over the link (whole units)
    commands: float = 0.0
    seconds: float = 0.0

    def __add__(self, other: "Transfer") -> "Transfer":
        return Transfer(self.payload + other.payload, self.moved + other.moved, self.commands + other.commands,
                        self.seconds + other.seconds)


def _time(link: Link, moved: float, commands: float, write: bool) -> float:
    device_bw, iops = (link.write_bw, link.write_iops) if write else (link.read_bw, link.read_iops)
    engine = moved / link.engine_bw if link.engine_bw else 0.0
    return max(moved / (link.link_bw * link.link_eff), moved / device_bw, commands / iops, engine)


def _units_of_run(run_bytes: float, slice_bytes: float, unit: int, aligned: bool = False) -> float:
    """Mean units a run of ``run_bytes`` spans.

    Unaligned runs start at a random slice boundary: 1 + (L − s)/g. Aligned runs start on a unit boundary and
    their length varies in slice steps around L, so the last unit is on average half used: L/g + (1 − s/g)/2.
    """
    if slice_bytes >= unit:
        return math.ceil(slice_bytes / unit) * run_bytes / slice_bytes
    if aligned:
        return run_bytes / unit + (1 - slice_bytes / unit) / 2
    return 1 + (run_bytes - slice_bytes) / unit


def _runs(link: Link, runs: float, run_bytes: float, slice_bytes: float, write: bool,
          aligned: bool = False) -> Transfer:
    units = _units_of_run(run_bytes, slice_bytes, link.unit_bytes, aligned)
    moved = runs * units * link.unit_bytes
    commands = runs * max(1, math.ceil(units * link.unit_bytes / link.max_command_bytes))
    return Transfer(runs * run_bytes, moved, commands, _time(link, moved, commands, write))


def read_transfer(link: Link, layout: Layout, *, offloaded: float, selected: float, regions: int,
                  slice_bytes: float, run_tokens: float = 1.0, measured_run: tuple | None = None) -> Transfer:
    """Read ``selected`` of the ``offloaded`` tokens from each of ``regions`` regions of one layer.

    A region holds one slice of ``slice_bytes`` per token: (K or V, KV head) regions of head slices for the
    token-order and cluster layouts; (K or V) regions of all-head slices for ReKV's blocks. ``run_tokens`` is the
    run length in slices of the ``block_contiguous`` and ``cluster_contiguous`` layouts; ``measured_run`` =
    (token slices per command, bytes moved per payload byte) of the KVMU replaces it for the cluster layout.
    """
    if selected <= 0 or offloaded <= 0:
        return Transfer()
    selected = min(selected, offloaded)
    full = _runs(link, regions, offloaded * slice_bytes, slice_bytes, False)
    full = Transfer(regions * selected * slice_bytes, full.moved, full.commands, full.seconds)
    if layout == "full":
        return full
    r = selected / offloaded
    if layout == "token_scattered":
        unit = link.unit_bytes
        if slice_bytes >= unit:
            moved = regions * selected * math.ceil(slice_bytes / unit) * unit
            commands = regions * selected * max(1, math.ceil(slice_bytes / link.max_command_bytes))
        else:
            per_unit = max(1, unit // int(slice_bytes))
            units = regions * math.ceil(offloaded / per_unit)
            touched = units * (1 - (1 - r) ** per_unit)
            moved, commands = touched * unit, touched
        plan = Transfer(regions * selected * slice_bytes, moved, commands, _time(link, moved, commands, False))
    elif layout == "cluster_contiguous" and measured_run is not None:
        run_slices, overhead = measured_run
        run_bytes = max(1.0, run_slices) * slice_bytes
        payload = regions * selected * slice_bytes
        plan = _runs(link, payload / run_bytes, run_bytes, slice_bytes, False, aligned=True)
        moved = max(plan.moved, overhead * payload)
        plan = Transfer(payload, moved, plan.commands, _time(link, moved, plan.commands, False))
    elif layout in ("block_contiguous", "cluster_contiguous"):
        run_bytes = run_tokens * slice_bytes
        total_runs = regions * selected * slice_bytes / run_bytes
        plan = _runs(link, total_runs, run_bytes, slice_bytes, False, aligned=layout == "cluster_contiguous")
    else:
        raise ValueError(f"unknown layout {layout!r}")
    return plan if plan.seconds <= full.seconds else full


def write_transfer(link: Link, layout: Layout, *, tokens: float, regions: int, slice_bytes: float) -> Transfer:
    """Write ``tokens`` evicted tokens of one layer into each of ``regions`` regions.

    Token-order layouts append one run of ``tokens`` slices per region. The cluster-contiguous layout appends
    every slice to its cluster's region, one write command per slice (units are written whole).
    """
    if tokens <= 0:
        return Transfer()
    if layout == "cluster_contiguous":
        return _runs(link, regions * tokens, slice_bytes, slice_bytes, True)
    return _runs(link, regions, tokens * slice_bytes, slice_bytes, True)
