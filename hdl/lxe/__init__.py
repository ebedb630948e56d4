"""The LXE: BF16 MAC trees and the DPE, the VPE, the on-chip SRAM banks, and their top (docs/formats.md §LXE)."""
