"""The IP package of `vrex verilog`: interface description, SDC, shipped waivers, FuseSoC core (list, show, lint,
sim), folder clashes."""

import json
import re
import shutil
import subprocess

import pytest

import mutants
from vrex.config import load_config
from vrex.errors import UsageError
from vrex.hdl.registry import component_names
from vrex.sim.bench import StreamBench
from vrex.sim.dre.hamming_lanes import make_bench
from vrex.sim.verilog_bench import STALL_PROBABILITY, verilog_testbench
from vrex.synth.fusesoc import core_vlnv
from vrex.synth.interface import verilog_ports
from vrex.synth.lint import lint_command, verilator_lint
from vrex.synth.verilog import emit
from vrex.synth.waivers import copy_aliases, submodule_port_aliases, waiver_text
from vrex.tools import require

TINY = load_config("tiny")


def _interface(e):
    return json.loads(e.file("interface_json").read_text())


def fusesoc(*args, cwd):
    exe = require("fusesoc").path
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_interface_matches_the_verilog_and_the_signature():
    e = emit("dre", TINY)
    d = _interface(e)
    verilog = {p["name"]: (p["direction"], p["width"]) for p in verilog_ports(e.verilog.read_text(), e.top)}
    assert {p["name"]: (p["direction"], p["width"]) for p in d["ports"]} == verilog
    assert {p["name"]: p["role"] for p in d["ports"] if p["role"] != "data"} == {"clk": "clock", "rst": "reset"}
    streams = {s["name"]: s for s in d["streams"]}
    assert set(streams) == {"codes", "assignments", "counts", "scores", "rows", "selection", "kvmu_ctrl", "kvmu_tokens",
                            "kvmu_masks", "kvmu_resp"}
    for s in streams.values():   # fields tile the payload, LSB first
        top = [f for f in s["fields"] if "[*]" not in f["name"] and "." not in f["name"]]
        assert [f["lsb"] for f in top] == [sum(g["width"] for g in top[:k]) for k in range(len(top))]
        assert sum(f["width"] for f in top) == s["payload_width"] == verilog[s["ports"]["payload"]][1]
    code = {f["name"]: f for f in streams["codes"]["fields"]}
    assert (code["code"]["lsb"], code["code"]["width"], code["preload"]["lsb"]) == (0, TINY.resv.hash_bits, 16)
    assert "store `code` in the next free slot" in code["preload"]["doc"]          # the layout's field comment
    assert streams["codes"]["doc"].startswith("HCU input items") and streams["codes"]["direction"] == "input"
    counts = {f["name"]: f for f in streams["counts"]["fields"]}["counts"]
    assert (counts["type"], counts["length"], counts["element_width"]) == ("array", TINY.dre.wtu.lanes,
                                                                          TINY.dre.wtu.count_bits)
    signals = {s["name"]: s for s in d["signals"]}
    assert signals["status.hcu_tokens"]["port"] == "status__hcu_tokens" and signals["threshold"]["direction"] == "input"
    # technology.clock_mhz 0 (auto: resolved per library by the figures flow) ships the design clock
    assert TINY.technology.clock_mhz == 0 and d["clock"]["mhz"] == TINY.technology.target_clock_mhz
    assert d["vlnv"] == core_vlnv("dre", TINY)
    md = e.file("interface_md").read_text()
    assert "| `code` | 15:0 | 16 | unsigned(16) |" in md and "### `selection` (output" in md


@pytest.mark.parametrize("clock_mhz, expected_mhz", [(0.0, TINY.technology.target_clock_mhz), (250.0, 250.0)])
def test_sdc_clock_delays_and_reset_false_path(clock_mhz, expected_mhz):
    cfg = TINY.with_overrides({"technology.clock_mhz": clock_mhz})
    e = emit("hcu", cfg)
    d, sdc = _interface(e), e.file("sdc").read_text()
    period = 1000 / expected_mhz
    delay = period * cfg.ip.io_delay_fraction
    assert f"create_clock -name clk -period {period:g} [get_ports clk]" in sdc
    ins = re.search(rf"set_input_delay {delay:g} -clock clk \[get_ports {{([^}}]*)}}\]", sdc).group(1).split()
    outs = re.search(rf"set_output_delay {delay:g} -clock clk \[get_ports {{([^}}]*)}}\]", sdc).group(1).split()
    assert set(ins) == {p["name"] for p in d["ports"] if p["direction"] == "input"} - {"clk"}
    assert set(outs) == {p["name"] for p in d["ports"] if p["direction"] == "output"}
    assert "set_false_path -from [get_ports rst]" in sdc


def test_shipped_waivers_are_exact(work_dir):
    """The DRE lints clean with its waiver file alone; without the alias waivers it does not, and an unused wire
    that is no alias still fails with the regenerated waivers. The flat DRE: its top instantiates Amaranth's own
    submodules, whose ports the backend aliases (the hierarchical one's top instantiates the part modules)."""
    e = emit("dre", TINY, flat=True)
    text = e.verilog.read_text()
    aliases = submodule_port_aliases(text)
    assert {a.port for a in aliases} >= {"busy", "i__payload", "o__valid", "row__ready", "group__payload"}
    assert {a.module for a in aliases} == {"vrex_dre", "vrex_dre.kvmu"}       # the DRE top and the KVMU's own top
    assert all(a.child.startswith(a.module + ".") and a.child.count(".") == a.module.count(".") + 1 for a in aliases)
    assert verilator_lint(e).clean
    verilator = require("verilator").path

    def lint(verilog, waivers):
        (work_dir / e.verilog.name).write_text(verilog)
        (work_dir / e.waivers.name).write_text(waivers)
        out = subprocess.run(lint_command(e, verilator), cwd=work_dir, capture_output=True, text=True)
        return set(re.findall(r"%Warning-UNUSEDSIGNAL: \S+ Signal is not used: '([^']+)'", out.stderr))

    generic = e.waivers.read_text().split("// 9.")[0]
    unwaived = lint(text, generic)
    copies = {a.wire for a in copy_aliases(text, exclude=aliases)}
    assert unwaived and unwaived <= {a.wire for a in aliases} | copies and unwaived & {a.wire for a in aliases}
    probe = text.replace("  wire busy;\n", "  wire busy;\n  wire vrex_probe = clear;\n", 1)
    assert lint(probe, waiver_text(probe, e.verilog.name)) == {"vrex_probe"}


@pytest.mark.parametrize("component", ["wtu", "kvmu"])
def test_the_package_with_its_testbench_lints_clean(component, work_dir):
    """The whole package, design and tb_<top>.v, is clean under `verilator --lint-only -Wall` with the shipped
    waivers: the testbench's clocked blocks assign its state with <= (no BLKSEQ), the reset is released on a falling
    edge (no INITIALDLY). Without the design file's TIMESCALEMOD waiver (rule 11) exactly that rule warns, on the
    design's modules only: the testbench itself needs no waiver of its own."""
    e = emit(component, TINY)
    tb = e.file("testbench")
    assert verilator_lint(e, testbench=True).clean, (e.directory / "lint_tb.log").read_text()[-3000:]
    for f in (e.verilog, tb):
        shutil.copy(f, work_dir / f.name)
    (work_dir / e.waivers.name).write_text(e.waivers.read_text().split("// 11.")[0])
    out = subprocess.run(lint_command(e, require("verilator").path, testbench=True), cwd=work_dir,
                         capture_output=True, text=True)
    warnings = re.findall(r"^%Warning-(\w+): ([^:]+):", out.stderr, re.M)
    assert warnings and {w for w, _ in warnings} == {"TIMESCALEMOD"} and {f for _, f in warnings} == {e.verilog.name}


def test_fusesoc_lists_shows_lints_and_simulates_the_core(work_dir):
    e = emit("dre", TINY)
    vlnv = core_vlnv("dre", TINY)
    listed = fusesoc("--cores-root", str(e.directory), "core", "list", cwd=work_dir)
    assert listed.returncode == 0 and re.search(rf"^{re.escape(vlnv)}\s*:\s*local", listed.stdout, re.M), listed.stdout
    shown = fusesoc("--cores-root", str(e.directory), "core", "show", vlnv, cwd=work_dir)
    targets = set(re.findall(r"^(\w+)\s*:", shown.stdout.split("Targets:")[-1], re.M))
    assert shown.returncode == 0 and {"default", "lint", "sim"} <= targets, shown.stdout
    for target in ("lint", "sim"):
        run = fusesoc("--cores-root", str(e.directory), "run", "--build-root", str(work_dir / target), "--target",
                      target, vlnv, cwd=work_dir)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "PASS: vrex_dre: " in run.stdout and "beats match the golden model" in run.stdout
    vc = next((work_dir / "lint").rglob("*.vc")).read_text().split()
    assert [n.rsplit("/", 1)[-1] for n in vc if n.endswith((".vlt", ".v"))] == [e.waivers.name, e.verilog.name]
    assert "VERILATOR_OPTIONS := -Wall" in next((work_dir / "lint").rglob("config.mk")).read_text()
    # the same lint through FuseSoC fails once the alias waivers are gone
    broken = work_dir / "broken"
    shutil.copytree(e.directory, broken, ignore=shutil.ignore_patterns("sim_*", ".*", "lint.log"), dirs_exist_ok=True)
    (broken / e.waivers.name).write_text(e.waivers.read_text().split("// 9.")[0])
    run = fusesoc("--cores-root", str(broken), "run", "--build-root", str(work_dir / "broken-lint"), "--target", "lint",
                  vlnv, cwd=work_dir)
    assert run.returncode != 0 and "UNUSEDSIGNAL" in run.stdout + run.stderr


def _icarus(work_dir, verilog: str, tb: str) -> subprocess.CompletedProcess:
    (work_dir / "dut.v").write_text(verilog)
    (work_dir / "tb.v").write_text(tb)
    subprocess.run([require("iverilog").path, "-g2005", "-o", str(work_dir / "tb.vvp"), "dut.v", "tb.v"], check=True,
                   cwd=work_dir)
    return subprocess.run(["vvp", "-n", "tb.vvp"], capture_output=True, text=True, cwd=work_dir)


def test_golden_vector_testbench_catches_a_wrong_reference(work_dir):
    e = emit("hamming_lanes", TINY)
    p = 1 - STALL_PROBABILITY
    for reference, ok in ((None, True), (mutants.lanes_less_equal, False)):
        kw = {"reference": reference} if reference else {}
        bench = make_bench(TINY, n=100, seed=1, p_valid=p, p_ready=p, **kw)
        tb = verilog_testbench(bench, _interface(e), name="tb", clock_mhz=100, origin="test")
        run = _icarus(work_dir, e.verilog.read_text(), tb)
        assert (run.returncode == 0) == ok and ("PASS: vrex_hamming_lanes: 100 i, 100 o beats" in run.stdout) == ok
        assert ok or "FAIL: o beat" in run.stdout


def test_kvmu_testbench_serves_axi_and_catches_wrong_references(work_dir):
    """The KVMU's Verilog testbench (own AXI4 slaves, paged memories, the LXE's writes) passes on multi-beat bursts
    under random stalls, and fails on a golden model that drops a burst's last beat, a wrong response and a wrong
    memory image."""
    from vrex.sim.cases import KVMU_CASES
    from vrex.sim.dre.kvmu.bench import make_bench as kvmu_bench
    from vrex.sim.dre.kvmu.verilog_bench import kvmu_testbench, usable_kvmu_bench

    cfg = next(c for c in KVMU_CASES if c.id == "kvmu-128b-evict-every-frame").config()
    e = emit("kvmu", cfg)
    interface = _interface(e)
    kw = dict(n=8 * cfg.kvmu_map.contexts, seed=2, fill=False, pages=True, address_records=True, min_tokens=15)
    good = kvmu_bench(cfg, **kw)
    assert max(b[2] for x in good.expected for bursts in x["bursts"].values() for b in bursts) > 8
    assert "address pattern" in usable_kvmu_bench(kvmu_bench(cfg, **{**kw, "address_records": False}),
                                                 interface["ports"])
    wrong_resp = kvmu_bench(cfg, **kw)
    wrong_resp.expected[3]["resp"] ^= 1
    wrong_page = kvmu_bench(cfg, **kw)
    wrong_page.page_sums[-1][2] ^= 1
    for bench, failure in ((good, None), (kvmu_bench(cfg, reference=mutants.KVMUDropsTheLastBeat, **kw), r" (AR|AW) burst"),
                           (wrong_resp, "FAIL: response of job 3"), (wrong_page, "differs from the golden image")):
        assert usable_kvmu_bench(bench, interface["ports"]) is None
        run = _icarus(work_dir, e.verilog.read_text(), kvmu_testbench(bench, interface, name="tb", clock_mhz=100,
                                                                      origin="test"))
        if failure is None:
            assert run.returncode == 0 and "PASS: vrex_kvmu: " in run.stdout and "match the golden model" in run.stdout, \
                run.stdout[-2000:]
        else:
            assert run.returncode != 0 and re.search(failure, run.stdout), run.stdout[-2000:]


def test_idle_testbench_when_the_bench_cannot_be_replayed(work_dir):
    """A bench that leaves an input undriven (here the HCU's threshold) cannot be replayed; the idle test then
    fails on an output stream that transfers a beat or an output that is X."""
    e = emit("hcu", TINY)
    interface = _interface(e)
    from vrex.sim.dre.hcu import make_bench as hcu_bench
    from vrex.sim.verilog_bench import usable_bench

    bench = hcu_bench(TINY, n=10, seed=1)
    assert usable_bench(bench, interface["ports"]) is None
    bench.statics.clear()
    assert "does not drive the input threshold" in usable_bench(bench, interface["ports"])
    lanes = emit("hamming_lanes", TINY)
    idle = StreamBench(name="idle", inputs={}, expected={"o": []}, drain_cycles=32)
    tb = verilog_testbench(idle, _interface(lanes), name="tb", clock_mhz=100, origin="test")
    text = lanes.verilog.read_text()
    assert re.search(r"o__valid <= \\\$\d+ ;", text)
    run = _icarus(work_dir, text, tb)
    assert run.returncode == 0 and "idle after reset, every output defined" in run.stdout
    run = _icarus(work_dir, re.sub(r"o__valid <= \\\$\d+ ;", "o__valid <= 1'h1;", text), tb)
    assert run.returncode != 0 and "FAIL: o: more beats than expected" in run.stdout
    run = _icarus(work_dir, re.sub(r"o__valid <= \\\$\d+ ;", "o__valid <= 1'bx;", text), tb)
    assert run.returncode != 0 and re.search(r"FAIL: output (o__valid|i__ready) is X or Z", run.stdout)


def test_package_folder_clashes_are_one_sentence(tmp_path):
    out = tmp_path / "pkg"
    e = emit("hcu", TINY, out)
    assert emit("hcu", TINY, out).directory == e.directory           # the same package again: fine
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(UsageError, match=r"already holds the package of component hcu \(config tiny"):
        emit("wtu", TINY, out)
    with pytest.raises(UsageError, match="already holds the package of component hcu"):
        emit("hcu", TINY.with_overrides({"dre.hcu.lanes": 8}), out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing was touched
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        emit("hcu", TINY, tmp_path / "afile")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "vrex_hcu.v").write_text("// mine\n")
    with pytest.raises(UsageError, match="was not written by vrex"):
        emit("hcu", TINY, foreign)
    assert (foreign / "vrex_hcu.v").read_text() == "// mine\n"
    clash = tmp_path / "clash"
    clash.mkdir()
    (clash / "other.core").write_text(f"CAPI=2:\nname: {core_vlnv('hcu', TINY)}\n")
    with pytest.raises(UsageError, match="already declares the FuseSoC core"):
        emit("hcu", TINY, clash)
    (clash / "other.core").write_text("CAPI=2:\nname: someone:else:core:1.0\n")
    assert emit("hcu", TINY, clash).core.is_file()                    # another core beside ours is fine


def test_vlnv_fields_are_checked_at_load(tmp_path):
    from conftest import config_error

    assert config_error(tmp_path, "ip:\n  vendor: 'my vendor'\n") == (
        "bad.yaml, line 2: ip.vendor = 'my vendor': may only contain letters, digits, '.', '-' and '_' (a FuseSoC "
        "VLNV field), and must not be empty.")
    assert config_error(tmp_path, "ip:\n  library: ''\n").startswith("bad.yaml, line 2: ip.library = '': may only")
    assert config_error(tmp_path, "ip:\n  io_delay_fraction: 0.95\n") == (
        "bad.yaml, line 2: ip.io_delay_fraction = 0.95: must be ≤ 0.9.")


# components whose DPE load port is made too wide for an Amaranth netlist (64 trees × 64 inputs × 16 bits per
# load beat): emitting them is one clear error (synth/verilog.py check_top_width; docs/decisions.md)
TOO_WIDE = ["dpe", "lxe", "core"]
# the core's bench replays a whole ReSV session against cocotbext-axi memories and the LXE's numerics; its package's
# sim target is the idle test (docs/ip.md), which must pass and say so
IDLE_SIM_ONLY = {"core"}
IP_PAIRS = [(component, config) for config in ("tiny", "edge") for component in component_names()]
# flat tops of 64 MAC trees of 64 inputs: one Amaranth elaboration takes minutes and gigabytes (the edge DPE 319 s and
# 6.4 GB, docs/results-rtl.md), so CI packages them on tiny only; on edge their glues are emitted, synthesised and
# timed by the report's hierarchical figures (tests/synth/test_report.py), and `vrex verilog` emits them on demand
FLAT_EDGE_ON_DEMAND = [("dpe", "edge"), ("lxe", "edge"), ("core", "edge")]


def test_the_edge_pairs_left_to_demand_are_registered():
    assert set(FLAT_EDGE_ON_DEMAND) <= set(IP_PAIRS)


@pytest.mark.parametrize("component", TOO_WIDE)
def test_too_wide_top_is_one_clear_error(component, tmp_path, capsys):
    """The error names the component, the config, the width and the limit and the way out, before anything is
    written."""
    from vrex.cli import main
    from vrex.synth.verilog import TOP_INPUT_BITS_LIMIT

    config = tmp_path / "wide.yaml"
    config.write_text("lxe: {dpe_load_trees: 64}\n")
    cfg = load_config(str(config))
    with pytest.raises(UsageError) as e:
        emit(component, cfg, tmp_path / "pkg")
    msg = str(e.value)
    assert msg.startswith(f"component {component} (config {cfg.name}, hash {cfg.hash()}) has "), msg
    width = int(re.search(r"has (\d+) (top-level input bits|bits in one value inside)", msg).group(1))
    assert width > TOP_INPUT_BITS_LIMIT and f"more than the {TOP_INPUT_BITS_LIMIT} an Amaranth netlist" in msg
    assert "--component mac_tree" in msg and "smaller lxe.dpe_load_trees" in msg
    assert not (tmp_path / "pkg").exists()
    assert main(["verilog", "--component", component, "--config", str(config), "-o", str(tmp_path / "cli")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"vrex: error: {msg}" and "Traceback" not in "\n".join(err)


@pytest.mark.slow
@pytest.mark.parametrize("component, config", [p for p in IP_PAIRS if p not in FLAT_EDGE_ON_DEMAND])
def test_fusesoc_lint_and_sim_of_every_component(component, config, work_dir):
    e = emit(component, load_config(config))
    vlnv = core_vlnv(component, load_config(config))
    for target in ("lint", "sim"):
        run = fusesoc("--cores-root", str(e.directory), "run", "--build-root", str(work_dir / target), "--target",
                      target, vlnv, cwd=work_dir)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert f"PASS: {e.top}: " in run.stdout
    assert verilator_lint(e, testbench=True).clean, (e.directory / "lint_tb.log").read_text()[-3000:]
    if component in IDLE_SIM_ONLY:
        assert "idle after reset, every output defined" in run.stdout
    else:
        assert "match the golden model" in run.stdout or "jobs: responses, AXI bursts" in run.stdout


@pytest.mark.slow
def test_opensta_reads_the_sdc(work_dir):
    """OpenSTA on the sky130 netlist with the shipped SDC: the clock, the input delay and the false path apply."""
    from vrex.synth.liberty import resolve_library
    from vrex.synth.mapped import map_design

    cfg = TINY.with_overrides({"technology.clock_mhz": 100.0})
    e = emit("hamming_lanes", cfg)
    lib = resolve_library("sky130")
    m = map_design(e, lib, cfg, work_dir, clock_mhz=cfg.technology.clock_mhz)
    shutil.copy(e.file("sdc"), work_dir / "design.sdc")
    script = "\n".join([*(f"read_liberty {f.name}" for f in lib.files), f"read_verilog {m.netlist.name}",
                        f"link_design {m.top}", "read_sdc design.sdc", "report_checks -path_delay max -format full",
                        "report_checks -from [get_ports rst]"])
    (work_dir / "sdc.tcl").write_text(script + "\n")
    out = subprocess.run([require("sta").path, "-no_splash", "-exit", "sdc.tcl"], cwd=work_dir, capture_output=True,
                         text=True, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "Warning" not in text and "Error" not in text, text[-2000:]
    assert "clock clk (rise edge)" in text and "10.00" in text                      # period 10 ns
    assert re.search(r"2\.00\s+2\.00\s+[v^]\s+input external delay", text), text[-2000:]
    assert "No paths found." in text                                               # rst is a false path
