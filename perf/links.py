"""Named link generations for design sweeps: each sets the link (and, where the generation implies it, the offload
tier behind it) with the config keys it stands for.

PCIe rates are the usable per-direction rates of the paper's convention (PCIe 3.0 x4 = 4 GB/s), doubling per
generation. An NVMe SSD of the link's generation is assumed behind a PCIe link (the BG6 of the edge config is a
PCIe 4.0 x4 drive; a Gen5 client drive reads ≈ 14 GB/s at ≈ 2.5 M IOPS: vendor-specification class, an assumption).
CXL 2.0 runs on the PCIe 5.0 PHY (32 GB/s at x8) to a CXL memory expander: host-DRAM-like tier, 64 B lines.
Every lane costs ``system.link.watts_per_lane`` at full load (the paper's 3 W per PCIe lane, kept for every
generation).
"""

from __future__ import annotations

__all__ = ["LINKS", "link_overrides"]

_BG6 = {"system.storage.kind": "ssd", "system.storage.read_gbs": 6.0, "system.storage.write_gbs": 5.0,
        "system.storage.page_bytes": 4096, "system.storage.read_iops": 850e3, "system.storage.write_iops": 900e3,
        "system.storage.max_command_bytes": 131072}
_GEN5_SSD = {**_BG6, "system.storage.read_gbs": 14.0, "system.storage.write_gbs": 12.0,
             "system.storage.read_iops": 2.5e6, "system.storage.write_iops": 2.5e6}


def _cxl_memory(gbs: float) -> dict:
    return {"system.storage.kind": "host_dram", "system.storage.read_gbs": gbs, "system.storage.write_gbs": gbs,
            "system.storage.page_bytes": 64, "system.storage.read_iops": 1e9, "system.storage.write_iops": 1e9,
            "system.storage.max_command_bytes": 4096}


def _link(kind: str, gbs: float, lanes: int) -> dict:
    return {"system.link.kind": kind, "system.link.bandwidth_gbs": gbs, "system.link.lanes": lanes}


LINKS = {
    "pcie3x4": {**_link("PCIe 3.0 x4", 4.0, 4), **_BG6},
    "pcie4x4": {**_link("PCIe 4.0 x4", 8.0, 4), **_BG6},
    "pcie5x4": {**_link("PCIe 5.0 x4", 16.0, 4), **_GEN5_SSD},
    "cxl2x8": {**_link("CXL 2.0 x8", 32.0, 8), **_cxl_memory(32.0)},
    "cxl2x16": {**_link("CXL 2.0 x16", 64.0, 16), **_cxl_memory(64.0)},
}


def link_overrides(name: str) -> dict:
    """The config overrides of a named link generation (KeyError if unknown)."""
    return dict(LINKS[name])
