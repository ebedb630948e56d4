"""Bit-exact references of the DRE's blocks (Hamming lanes, HCU, WTU, KVMU) and the block jobs a session produces."""
