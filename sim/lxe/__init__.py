"""Benches of the LXE blocks (MAC tree, DPE, VPE, SRAM, LXE top) against the golden models in vrex.golden.lxe."""
