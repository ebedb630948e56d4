"""AXI4 master port signature (one per tier), with the flat signal names cocotbext-axi binds to."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["axi4_signature", "OKAY"]

OKAY = 0


def axi4_signature(addr_bits: int, data_bits: int, id_bits: int) -> wiring.Signature:
    """Master view: AW, W, B, AR, R channels (INCR bursts only; no lock/cache/prot/qos signals: AXI defaults)."""
    return wiring.Signature({
        "awid": Out(id_bits), "awaddr": Out(addr_bits), "awlen": Out(8), "awsize": Out(3), "awburst": Out(2),
        "awvalid": Out(1), "awready": In(1),
        "wdata": Out(data_bits), "wstrb": Out(data_bits // 8), "wlast": Out(1), "wvalid": Out(1), "wready": In(1),
        "bid": In(id_bits), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
        "arid": Out(id_bits), "araddr": Out(addr_bits), "arlen": Out(8), "arsize": Out(3), "arburst": Out(2),
        "arvalid": Out(1), "arready": In(1),
        "rid": In(id_bits), "rdata": In(data_bits), "rresp": In(2), "rlast": In(1), "rvalid": In(1), "rready": Out(1),
    })
