"""The paper's figures that vrex's report is compared with (V-Rex, HPCA 2026, Table III and §V-B).

One V-Rex core synthesised with Synopsys Design Compiler at 14 nm, 0.8 V, 800 MHz (pre-layout STA). Only the
DRE rows matter here; the LXE rows are kept for the block shares.
"""

__all__ = ["TABLE_III", "CORE_TOTAL", "DRE_MEMORY_KB", "PAPER_NODE", "PAPER_BLOCKS", "SYSTEMS"]

PAPER_NODE = {"node_nm": 14.0, "voltage": 0.8, "clock_mhz": 800.0, "tool": "Synopsys Design Compiler (pre-layout)"}

# block -> (area mm², area % of the core, power mW, power % of the core)
TABLE_III = {
    "DPE": (1.37, 72.79, 2311.39, 88.58),
    "VPE": (0.14, 7.18, 122.06, 4.68),
    "On-chip memory": (0.34, 17.98, 118.94, 4.56),
    "HCU": (0.01, 0.28, 2.99, 0.11),
    "WTU": (0.02, 1.23, 39.04, 1.49),
    "KVMU": (0.01, 0.53, 15.01, 0.58),
}
CORE_TOTAL = (1.89, 2609.43)   # mm², mW
DRE_MEMORY_KB = 20.125         # 128 B + 4 KB + 8 KB + 8 KB (paper Fig. 10)

# Paper block -> vrex component name that implements it (None: no RTL in this project yet).
PAPER_BLOCKS = {"HCU": "hcu", "WTU": "wtu", "KVMU": "kvmu", "DRE": "dre"}

# System -> (cores, area mm², system power W) of paper §VI-F (the power includes DRAM, link and storage).
SYSTEMS = {"V-Rex8": (8, 15.12, 35.0), "V-Rex48": (48, 90.57, 203.68)}
