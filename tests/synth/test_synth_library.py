"""Liberty resolution errors, the scaling equations and the SRAM model (most tests need no PDK folder)."""

import gzip
import os
from pathlib import Path

import pytest
from conftest import pdk_folder

from vrex.cli import main
from vrex.synth.liberty import LibertyError, resolve_library
from vrex.synth.scaling import area_factor, delay_factor, energy_factor, power_factor, scaling_between
from vrex.synth.sram import ANALYTIC_SOURCE, read_asap7_macros, sram_model

PDK = pdk_folder()


# ---- broken Liberty paths give one clear error -----------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(LibertyError, match=r"--liberty .*nope\.lib: no such file; give sky130, asap7, or the path"):
        resolve_library(str(tmp_path / "nope.lib"))


def test_folder_instead_of_file(tmp_path):
    with pytest.raises(LibertyError, match="is a folder; give a .lib or .lib.gz file"):
        resolve_library(str(tmp_path))


def test_corrupt_gzip(tmp_path):
    bad = tmp_path / "broken.lib.gz"
    bad.write_bytes(b"this is not gzip data")
    with pytest.raises(LibertyError, match="cannot be read"):
        resolve_library(str(bad))


def test_not_a_liberty_file(tmp_path):
    f = tmp_path / "notes.lib"
    f.write_text("hello\n")
    with pytest.raises(LibertyError, match=r"is not a Liberty file \(no `library \(...\)` group\)"):
        resolve_library(str(f))


def test_liberty_without_cells(tmp_path):
    f = tmp_path / "empty.lib.gz"
    with gzip.open(f, "wt") as g:
        g.write('library (empty) {\n  time_unit : "1ns";\n  capacitive_load_unit (1,pf);\n}\n')
    with pytest.raises(LibertyError, match="defines no cells with an area"):
        resolve_library(str(f))


def test_known_libraries_are_embedded(monkeypatch):
    """With no folder named anywhere, sky130 and ASAP7 come from the copies inside vrex, licences beside them."""
    from vrex.paths import embedded_pdk_dir, pdk_source

    monkeypatch.delenv("VREX_PDK_DIR", raising=False)
    assert pdk_source() == "embedded"
    for name in ("sky130", "asap7"):
        lib = resolve_library(name)
        assert lib.cells and lib.node_nm in (130.0, 7.0)
    folder = embedded_pdk_dir()
    assert {"LICENSE.sky130", "LICENSE.asap7", "README.md"} <= {p.name for p in folder.iterdir()}
    assert (folder / "asap7_sram" / "LICENSE").is_file()


def test_named_folder_that_does_not_exist(monkeypatch, tmp_path):
    """An override that points nowhere is reported, never silently replaced by the embedded libraries."""
    monkeypatch.setenv("VREX_PDK_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(LibertyError, match=r"named by VREX_PDK_DIR does not exist.*unset it to use the libraries "
                                           "embedded in vrex"):
        resolve_library("sky130")


def test_folder_without_the_expected_files(monkeypatch, tmp_path):
    monkeypatch.setenv("VREX_PDK_DIR", str(tmp_path))
    with pytest.raises(LibertyError, match=r"has no asap7sc7p5t_SIMPLE_RVT_TT_nldm\.lib.*needed for --liberty asap7"):
        resolve_library("asap7")


def test_cli_reports_a_broken_liberty_in_one_line(tmp_path, capsys):
    code = main(["synth", "--component", "hamming_lanes", "-c", "tiny", "--liberty", str(tmp_path / "x.lib")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("vrex: error: --liberty ") and "no such file" in err and "\n" not in err


def test_custom_library_path_and_drive_cell():
    lib = resolve_library(str(Path(PDK) / "sky130_fd_sc_hd__tt_025C_1v80.lib.gz"))
    assert lib.name == "sky130_fd_sc_hd__tt_025C_1v80" and lib.node_nm is None and lib.voltage == 1.8
    assert lib.drive_cell in lib.cells and not lib.cells[lib.drive_cell].sequential
    assert resolve_library(str(Path(PDK) / "sky130_fd_sc_hd__tt_025C_1v80.lib.gz"), source_node_nm=130).node_nm == 130
    with pytest.raises(LibertyError, match="input driving cell 'nosuchcell' is not in the library"):
        resolve_library("sky130", drive_cell="nosuchcell")


def test_flop_output_polarity():
    sky, a7 = resolve_library("sky130"), resolve_library("asap7")
    assert sky.cells["sky130_fd_sc_hd__dfxtp_1"].state_pins == (("Q", False),)
    assert dict(sky.cells["sky130_fd_sc_hd__dfrbp_1"].state_pins) == {"Q": False, "Q_N": True}
    assert a7.cells["DFFHQNx1_ASAP7_75t_R"].state_pins == (("QN", True),)


# ---- scaling equations (Stillmaker & Baas 2017) ----------------------------------------------------------------


def test_area_table_values_and_direction():
    assert area_factor(130, 14) == pytest.approx(1 / 37)
    assert area_factor(7, 14) == pytest.approx(1 / 0.34)
    assert area_factor(14, 14) == 1.0
    assert area_factor(130, 14) * area_factor(14, 130) == pytest.approx(1.0, rel=0.02)


def test_erratum_example_energy_factors():
    # the authors' erratum: HP32 at 0.9 V -> 0.4571; 65 nm at 1.3 V -> 2.604
    assert energy_factor(65, 1.3, 32, 0.9) == pytest.approx(0.4571 / 2.604, rel=1e-3)


def test_voltage_polynomials_are_ratios():
    # moving to the same point is 1; going there and back is 1; lower voltage costs delay, saves energy
    assert delay_factor(14, 0.8, 14, 0.8) == 1.0
    assert energy_factor(130, 1.8, 7, 0.7) * energy_factor(7, 0.7, 130, 1.8) == pytest.approx(1.0)
    assert delay_factor(14, 0.8, 14, 0.7) > 1 and energy_factor(14, 0.8, 14, 0.7) < 1
    assert power_factor(130, 1.8, 14, 0.8) < 1


def test_scaling_record_states_method_and_factors():
    s = scaling_between(130, 1.8, 100, 14, 0.8, 800)
    assert s.dynamic_power == pytest.approx(s.energy * 8)
    d = s.as_dict()
    assert d["factors"]["area"] == pytest.approx(1 / 37) and "Stillmaker" in d["source"]
    assert "130 nm, 1.8 V, 100 MHz to 14 nm, 0.8 V, 800 MHz" in s.method()
    with pytest.raises(ValueError, match="not one of the fitted nodes"):
        scaling_between(28, 0.9, 100, 14, 0.8, 800)


# ---- SRAM model ----------------------------------------------------------------------------------------------


def test_stored_model_without_folder():
    m = sram_model(None)
    assert m.source == ANALYTIC_SOURCE
    small, big = m.estimate(32, 16), m.estimate(4096, 16)
    assert 0 < small["area_um2"] < big["area_um2"]
    assert big["area_um2"] >= 0.035 * 4096 * 16   # never below the densest bank's bit-cell area
    assert m.estimate(128, 32)["area_um2"] < m.estimate(128, 64)["area_um2"] < m.estimate(256, 64)["area_um2"]


def test_stored_model_matches_the_asap7_liberties():
    macros = read_asap7_macros(Path(PDK) / "asap7_sram")
    assert len(macros) == 7
    fit, stored = sram_model(Path(PDK)), sram_model(None)
    for mac in macros:
        e = fit.estimate(mac.words, mac.bits)
        assert e["area_um2"] == pytest.approx(mac.area_um2, rel=0.03)
        assert e["read_pj"] == pytest.approx(mac.read_pj, rel=1e-6) and e["access_ns"] == pytest.approx(mac.access_ns, rel=0.03)
        assert stored.estimate(mac.words, mac.bits) == pytest.approx(e, rel=1e-6)
