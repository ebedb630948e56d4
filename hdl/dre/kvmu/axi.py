"""AXI4 master port signatures, with the flat signal names cocotbext-axi binds to."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["axi4_signature", "drive_constants", "OKAY", "CONSTANT_MEMBERS"]

OKAY = 0
# Fields the KVMU drives to constants (ID 0, INCR, full-width beats, B always accepted): the top ties them, so the
# blocks' port signatures leave them out.
CONSTANT_MEMBERS = ("awid", "awsize", "awburst", "arid", "arsize", "arburst", "bready")


def axi4_signature(addr_bits: int, data_bits: int, id_bits: int, *, constants: bool = True,
                   strobes: bool = True) -> wiring.Signature:
    """Master view of AW, W, B, AR, R (INCR bursts; no lock/cache/prot/qos: the AXI defaults). ``constants`` /
    ``strobes`` False leave out :data:`CONSTANT_MEMBERS` / ``wstrb`` (for the blocks behind the top)."""
    members = {
        "awid": Out(id_bits), "awaddr": Out(addr_bits), "awlen": Out(8), "awsize": Out(3), "awburst": Out(2),
        "awvalid": Out(1), "awready": In(1),
        "wdata": Out(data_bits), "wstrb": Out(data_bits // 8), "wlast": Out(1), "wvalid": Out(1), "wready": In(1),
        "bid": In(id_bits), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
        "arid": Out(id_bits), "araddr": Out(addr_bits), "arlen": Out(8), "arsize": Out(3), "arburst": Out(2),
        "arvalid": Out(1), "arready": In(1),
        "rid": In(id_bits), "rdata": In(data_bits), "rresp": In(2), "rlast": In(1), "rvalid": In(1), "rready": Out(1),
    }
    if not constants:
        for name in CONSTANT_MEMBERS:
            del members[name]
    if not strobes:
        del members["wstrb"]
    return wiring.Signature(members)


def drive_constants(m, port, beat_shift: int, beat_bytes: int, *, strobes: bool) -> None:
    """Tie the constant fields of a top-level port (and all byte strobes when the block has none)."""
    m.d.comb += [port.awid.eq(0), port.arid.eq(0), port.awsize.eq(beat_shift), port.arsize.eq(beat_shift),
                 port.awburst.eq(1), port.arburst.eq(1), port.bready.eq(1)]
    if not strobes:
        m.d.comb += port.wstrb.eq((1 << beat_bytes) - 1)


def connect_port(m, inner, outer, skip=()) -> None:
    """Connect a block's (reduced) port to a parent's full port, member by member, except ``skip``."""
    for name, member in inner.signature.members.items():
        if name in skip:
            continue
        a, b = getattr(inner, name), getattr(outer, name)
        m.d.comb += (b.eq(a) if member.flow == wiring.Out else a.eq(b))


__all__ += ["connect_port"]
