"""The DRE (dynamic retrieval engine): Hamming lanes, HCU, WTU, KVMU and the DRE top (hdl/dre/top.py)."""
