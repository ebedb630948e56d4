"""Bit-exact reference of the HCU (reference.py) and its vectorised twin for the ReSV session (tensor.py)."""
