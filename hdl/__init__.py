"""Amaranth components of the DRE datapath (vrex.hdl). Never imports vrex.golden."""
