"""Golden models (vrex.golden): ReSV in PyTorch and bit-exact references of every RTL block.

Imports nothing of the project except vrex.config.
"""
