"""`vrex synth -j N`: a composite's parts synthesised in worker processes, wave by wave, then added up."""

import json

import pytest

from vrex.cli import main
from vrex.config import load_config
from vrex.errors import VrexError
from vrex.synth.cli import _records_in_parallel
from vrex.synth.figures import component_figures

OPTIONS = {"liberty": None, "clock_mhz": None, "require_library": False, "activity": False, "transactions": None,
           "use_cache": True}


def test_parts_run_in_workers_and_the_composite_adds_them_up(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VREX_BUILD_DIR", str(tmp_path / "build"))
    cfg = load_config("tiny")
    records = _records_in_parallel(["vpe"], cfg, 2, OPTIONS)
    assert set(records) == {"vpe"}
    # the workers left every part's record in the cache: this process reads them and computes nothing
    for part in ("vpe_lane", "vpe_glue"):
        assert component_figures(part, cfg, cached_only=True, **{k: v for k, v in OPTIONS.items()}) is not None
    sequential = component_figures("vpe", cfg, cached_only=True, **OPTIONS)
    assert records["vpe"]["area_um2"] == sequential["area_um2"] > 0
    assert records["vpe"]["hierarchy"]["parts"] == sequential["hierarchy"]["parts"]
    # the command line prints the same record from the cache
    out = tmp_path / "vpe.json"
    assert main(["synth", "--component", "vpe", "-c", "tiny", "--no-activity", "-j", "2", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["vpe"]["area_um2"] == records["vpe"]["area_um2"]
    assert "synth: figures of 1 component" in capsys.readouterr().out


def test_a_failing_part_is_an_error_that_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("VREX_BUILD_DIR", str(tmp_path / "build"))
    cfg = load_config("tiny")
    bad = {**OPTIONS, "liberty": str(tmp_path / "missing.lib"), "require_library": True}
    with pytest.raises(VrexError) as e:
        _records_in_parallel(["vpe"], cfg, 2, bad)
    assert "vpe_glue failed:" in str(e.value) and "vpe_lane failed:" in str(e.value)


def test_one_job_or_one_worker_computes_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("VREX_BUILD_DIR", str(tmp_path / "build"))
    cfg = load_config("tiny")
    assert _records_in_parallel(["hamming_lanes"], cfg, 2, OPTIONS) == {}
    assert _records_in_parallel(["vpe"], cfg, 1, OPTIONS) == {}
