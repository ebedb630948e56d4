"""Hierarchical Verilog of composites (vrex.synth.instances): one module per distinct part, the flat design's logic."""

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vrex.config import load_config
from vrex.hdl.core import Core
from vrex.hdl.lxe.parts import Part, part
from vrex.hdl.lxe.vpe import VPE
from vrex.hdl.unused import silence_unused
from vrex.synth.instances import hierarchical_verilog, module_names, prove_equivalent
from vrex.synth.verilog import emit, is_composite


class Counter(wiring.Component):
    def __init__(self, *, width):
        self.width = width
        super().__init__(self.make_signature(width=width))

    @staticmethod
    def make_signature(*, width):
        return wiring.Signature({"en": In(1), "count": Out(width)})

    def elaborate(self, platform):
        m = Module()
        with m.If(self.en):
            m.d.sync += self.count.eq(self.count + 1)
        return m


class Counters(wiring.Component):
    """Two 4-bit counters and a 6-bit one: two distinct parts."""

    en: In(1)
    sum: Out(7)

    def hierarchy_parts(self):
        return {"a": Part(Counter, width=4), "b": Part(Counter, width=4), "c": Part(Counter, width=6)}

    def elaborate(self, platform):
        m = Module()
        a, b, c = (part(m, self, name, spec, False) for name, spec in self.hierarchy_parts().items())
        m.d.comb += [a.en.eq(self.en), b.en.eq(~self.en), c.en.eq(a.count[0]), self.sum.eq(a.count + b.count + c.count)]
        return m


def convert(design, name):
    return verilog.convert(design, name=name, emit_src=False)


def stub(design, name):
    """A module header with the ports Amaranth would give ``design``: dedup and naming without converting."""
    silence_unused(design)                 # never elaborated
    ports = ["clk", "rst"] + ["__".join(map(str, p)) for p, _, _ in design.signature.flatten(design.signature.create())]
    return f"module {name}({', '.join(ports)});\nendmodule\n"


def _equivalent(flat_text, hier_text, top, work_dir, name):
    (work_dir / f"{name}_flat.v").write_text(flat_text)
    (work_dir / f"{name}_hier.v").write_text(hier_text)
    return prove_equivalent(work_dir / f"{name}_flat.v", work_dir / f"{name}_hier.v", top, work_dir / name)


def test_identical_parts_are_one_module_and_a_variant_another():
    h = hierarchical_verilog(Counters(), "t", convert)
    rows = {r["module"]: r for r in h.summary()}
    variant = next(n for n in rows if n.startswith("t__counter_"))
    assert set(rows) == {"t", "t__counter", variant} and len(variant) == len("t__counter_") + 8
    assert (rows["t__counter"]["instances"], rows[variant]["instances"], rows["t"]["instances"]) == (2, 1, 1)
    assert rows["t"]["parts"] == {"a": "t__counter", "b": "t__counter", "c": variant}
    assert module_names(h.text) == ["t", variant, "t__counter"]           # the top first, as Verilator wants
    assert "t__counter a (" in h.text and "t__counter b (" in h.text and f"{variant} c (" in h.text


def test_the_edge_core_has_one_module_per_distinct_part():
    edge = load_config("edge")
    rows = {r["module"]: r for r in hierarchical_verilog(Core.from_config(edge), "vrex_core", stub).summary()}
    assert rows["vrex_core__mac_tree"]["instances"] == edge.lxe.dpe_trees == 64
    assert rows["vrex_core__vpe_lane"]["instances"] == edge.lxe.lanes
    # the edge ships the row rule: the resident-mass unit is a part of the core beside the LXE and the DRE (X8)
    assert set(rows) == {"vrex_core", *(f"vrex_core__{p}" for p in ("lxe", "dre", "dpe", "vpe", "mac_tree", "vpe_lane",
                                                                     "hcu", "exp_wtu", "kvmu", "resident_mass"))}
    assert all(r["instances"] == 1 for n, r in rows.items() if n not in ("vrex_core__mac_tree", "vrex_core__vpe_lane"))


def test_composites_only_are_hierarchical():
    assert [c for c in ("core", "lxe", "dpe", "vpe", "dre", "mac_tree", "hcu", "kvmu") if is_composite(c)] == [
        "core", "lxe", "dpe", "vpe", "dre"]


def test_hierarchical_is_the_flat_logic_and_a_changed_part_is_caught(work_dir):
    flat = convert(Counters(), "t")
    hier = hierarchical_verilog(Counters(), "t", convert).text
    assert _equivalent(flat, hier, "t", work_dir, "counters").proven
    head, sep, tail = hier.partition("module t__counter(")
    mutant = head + sep + tail.replace("count + 1'h1", "count + 2'h2", 1)  # the 4-bit counters count by 2
    assert mutant != hier
    r = _equivalent(flat, mutant, "t", work_dir, "mutant")
    assert not r.proven and r.unproven


def test_a_two_lane_vpe_is_the_flat_logic(work_dir):
    flat = convert(VPE(lanes=2), "vrex_vpe")
    h = hierarchical_verilog(VPE(lanes=2), "vrex_vpe", convert)
    assert [r["instances"] for r in h.summary()] == [2, 1]
    assert _equivalent(flat, h.text, "vrex_vpe", work_dir, "vpe").proven


def test_flat_emission_keeps_amaranths_own_modules(tmp_path):
    tiny = load_config("tiny")
    hier, flat = emit("dpe", tiny, tmp_path / "h"), emit("dpe", tiny, tmp_path / "f", flat=True)
    assert hier.hierarchical and not flat.hierarchical
    assert module_names(hier.verilog.read_text()) == ["vrex_dpe", "vrex_dpe__mac_tree"]
    assert module_names(flat.verilog.read_text()) == ["vrex_dpe"] + [f"vrex_dpe.tree{t}"
                                                                      for t in range(tiny.lxe.dpe_trees)]
