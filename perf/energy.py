"""Energy of a step as a sum of named parts; each part is a count times a per-unit energy (docs/perf.md).

V-Rex: DPE (MACs × ``dpe_pj_per_mac``), VPE (operations × ``vpe_pj_per_op``) (both Table III, or the figures'
DPE / VPE SAIF power: ``vrex.perf.platforms``), SRAM (bytes × ``sram_pj_per_byte``), HCU (code comparisons), WTU
(score visits), KVMU (bytes it moves; Table III or figures: ``vrex.perf.dre_timing``), DRAM (bytes × 8 × pJ/bit),
link (bytes moved × lanes × W per lane / link bandwidth: "3 W per lane at full load"), offload tier (bytes read /
written × pJ/B) and static power × latency.

GPU: compute (``power_w − idle_w − memory power at peak`` × the time kernels run: the SMs stay clocked and issuing
during memory-bound kernels, which is why GPUs draw most of their board power in memory-bound decoding), DRAM, link
and offload tier as for V-Rex (the same memory, link and SSD), and idle power × latency (the GPU idles while it
waits for a transfer). V-Rex is charged per operation instead: its MAC trees do not toggle while they wait for
memory, and their leakage is in ``perf.energy.static_w``.

Fetched KV is also written into device DRAM and evicted KV is read from it; those bytes count as DRAM energy (not
as DRAM time: they use ≈ 1% of the DRAM bandwidth, paper Fig. 17).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .transfer import Transfer
from .workload import Work

__all__ = ["Counters", "step_energy", "VREX_PARTS", "GPU_PARTS"]

VREX_PARTS = ("dpe", "vpe", "sram", "hcu", "wtu", "kvmu", "dram", "link", "offload", "static")
GPU_PARTS = ("compute", "dram", "link", "offload", "static")


@dataclass
class Counters:
    """Everything a step did, for energy and for the floors."""

    work: Work = field(default_factory=Work)
    compute_busy: float = 0.0       # seconds the compute engines were busy (sum over tasks)
    compute_active: float = 0.0     # seconds kernels ran (compute- or memory-bound; launch gaps excluded)
    read: Transfer = field(default_factory=Transfer)
    write: Transfer = field(default_factory=Transfer)
    hcu_compares: float = 0.0
    wtu_visits: float = 0.0
    hcu_cycles: float = 0.0
    wtu_cycles: float = 0.0

    def as_dict(self) -> dict:
        w = self.work
        return {"matmul_flops": w.matmul_flops, "vector_ops": w.vector_ops, "irregular_ops": w.irregular_ops,
                "dram_bytes": w.dram_bytes, "weight_bytes": w.weight_bytes, "sram_bytes": w.sram_bytes,
                "kernels": w.kernels, "compute_busy_s": self.compute_busy, "compute_active_s": self.compute_active,
                "fetch_payload_bytes": self.read.payload, "fetch_moved_bytes": self.read.moved,
                "fetch_commands": self.read.commands, "evict_payload_bytes": self.write.payload,
                "evict_moved_bytes": self.write.moved, "evict_commands": self.write.commands,
                "hcu_compares": self.hcu_compares, "wtu_score_visits": self.wtu_visits,
                "hcu_cycles": self.hcu_cycles, "wtu_cycles": self.wtu_cycles}


def step_energy(cfg, platform, counters: Counters, latency: float, dre=None) -> dict[str, float]:
    """Joules per part; the total is their sum."""
    w, c = counters.work, counters
    pj = 1e-12
    dram_bytes = w.dram_bytes + c.read.payload + c.write.payload
    moved = c.read.moved + c.write.moved
    link_j = moved * platform.link_lanes * cfg.system.link.watts_per_lane / platform.link_bw
    e = cfg.perf.energy
    offload_j = (c.read.moved * e.offload_read_pj_per_byte + c.write.moved * e.offload_write_pj_per_byte) * pj
    dram_j = dram_bytes * 8 * platform.dram_pj_per_bit * pj
    if platform.kind == "vrex":
        return {
            "dpe": w.matmul_flops / 2 * platform.dpe_pj_per_mac * pj,
            "vpe": w.vector_ops * platform.vpe_pj_per_op * pj,
            "sram": w.sram_bytes * platform.sram_pj_per_byte * pj,
            "hcu": c.hcu_compares * dre.hcu_pj_per_compare * pj,
            "wtu": c.wtu_visits * dre.wtu_pj_per_score * pj,
            "kvmu": moved * dre.kvmu_pj_per_byte * pj,
            "dram": dram_j,
            "link": link_j,
            "offload": offload_j,
            "static": platform.static_w * latency,
        }
    return {
        "compute": platform.compute_power_w * c.compute_active,
        "dram": dram_j,
        "link": link_j,
        "offload": offload_j,
        "static": platform.static_w * latency,
    }
