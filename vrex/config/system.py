"""The system section: cores, clock, device DRAM, host link and offload tier (SystemConfig)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .fields import _Section, param, section


@dataclass(frozen=True)
class DRAMConfig(_Section):
    kind: str = param("LPDDR5", "Device memory technology.")
    bandwidth_gbs: float = param(204.8, "Peak bandwidth (GB/s).", min=0.001, unit="GB/s")
    capacity_gb: float = param(32.0, "Capacity (GB).", min=0.001, unit="GB")
    bus_bits: int = param(256, "Bus width.", min=8)


@dataclass(frozen=True)
class LinkConfig(_Section):
    kind: str = param("PCIe 3.0 x4", "Host/storage link.")
    bandwidth_gbs: float = param(4.0, "Peak link bandwidth (GB/s).", min=0.001, unit="GB/s")
    lanes: int = param(4, "Link lanes (power: watts_per_lane each at full load).", min=1)
    watts_per_lane: float = param(3.0, "Power per lane at full load (paper §VI-A).", min=0, unit="W")


@dataclass(frozen=True)
class StorageConfig(_Section):
    kind: Literal["ssd", "host_dram"] = param("ssd", "Offload tier: M.2 NVMe SSD (edge) or host DDR4 (server).")
    read_gbs: float = param(6.0, "Offload-tier sequential read bandwidth (GB/s).", min=0.001, unit="GB/s")
    write_gbs: float = param(5.0, "Offload-tier sequential write bandwidth (GB/s).", min=0.001, unit="GB/s")
    page_bytes: int = param(4096, "Access granularity of the offload tier.", min=64)
    capacity_gb: float = param(1024.0, "Offload-tier capacity (Kioxia BG6 1 TB class M.2 SSD).", min=0.001, unit="GB")
    read_iops: float = param(850e3, "Read commands per second the offload tier serves (BG6: 850K random-read IOPS).",
                             min=1, unit="1/s")
    write_iops: float = param(900e3, "Write commands per second (BG6: 900K random-write IOPS).", min=1, unit="1/s")
    max_command_bytes: int = param(131072, "Largest single read/write command (NVMe MDTS; PCIe max read request "
                                           "for host memory).", min=64)


@dataclass(frozen=True)
class SystemConfig(_Section):
    name: str = param("V-Rex8", "System name (paper Table I).")
    cores: int = param(8, "V-Rex cores.", min=1)
    clock_mhz: float = param(800.0, "Core clock (MHz).", min=1, unit="MHz")
    dram: DRAMConfig = section(DRAMConfig, "Device DRAM.")
    link: LinkConfig = section(LinkConfig, "Host/storage link.")
    storage: StorageConfig = section(StorageConfig, "Offload tier.")
