"""Bit-exact golden models of the LXE: BF16 numerics (docs/formats.md §LXE), the MAC tree / DPE and the VPE."""
