"""The sequencer's routing codes, shared by its datapath (hdl/core/sequencer.py) and its FSM (hdl/core/phases.py,
hdl/core/resident_pass.py): the consumer an SRAM read's data goes to (the tag the read carries) and the back-end
mode (where the VPE's results go)."""

__all__ = ["NONE", "WBUF", "DPE", "KEY", "REC", "WTU", "M_HASH", "M_SCORE", "M_ADD", "M_MUL"]

# SRAM read consumers (the tag a read carries to its data)
NONE, WBUF, DPE, KEY, REC, WTU = range(6)
# back-end modes (where the VPE's results go)
M_HASH, M_SCORE, M_ADD, M_MUL = range(4)
