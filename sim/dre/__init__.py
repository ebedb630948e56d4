"""Benches of the DRE's blocks (Hamming lanes, HCU, WTU, KVMU) and of the DRE top."""
