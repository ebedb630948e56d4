"""Print the HCU tables of docs/results-rtl.md (markdown), measured with the tools on this checkout.

    .venv/bin/python scripts/hcu_results.py              # cycles and early-exit statistics (about a minute)
    .venv/bin/python scripts/hcu_results.py --figures    # also generic Yosys figures (the edge case: ~10 min)

Cycles are measured in amaranth.sim with no back-pressure and compared with the formula and with the exact cycle
model (vrex.golden.dre.hcu.reference.hcu_cycles); the large-workload statistics use that model, which the tests prove equal to
the RTL on every case of sim/cases.py HCU_CASES.
"""

import argparse
import random

from vrex.golden.dre.hcu.reference import early_exit_saving, hcu_cycles_for, hcu_worst_token_cycles
from vrex.golden.dre.jobs import HCUJob, random_jobs
from vrex.hdl.dre.hcu import HCU
from vrex.paths import git_revision
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.cases import HCU_CASES
from vrex.sim.dre.hcu import make_bench, measure_cycles, model_timings, token_cycles_from_result
from vrex.tools import tool_versions


def far_code(rng, codes, bits, threshold):
    """A random code at distance ≥ threshold from every code (so it joins nothing and cannot stop a scan)."""
    while True:
        c = rng.getrandbits(bits)
        if all((c ^ x).bit_count() >= threshold for x in codes):
            return c


def edge_per_token(case):
    cfg = case.config()
    h, bits, thr = cfg.dre.hcu, cfg.resv.hash_bits, cfg.resv.hamming_threshold
    rng = random.Random(1)
    sizes = (0, 1, 16, 17, 64, 256, 1024)
    jobs = []
    for n in sizes:
        codes = [rng.getrandbits(bits) for _ in range(n)]
        toks = ((codes[0],) if n else ()) + (far_code(rng, codes, bits, thr),)
        jobs.append(HCUJob(f"n{n}", tuple(codes), toks))
    bench = make_bench(cfg, jobs=jobs, p_valid=1.0, p_ready=1.0, name="hcu-edge-per-token")
    result = run_amaranth(HCU.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)
    measured = iter(token_cycles_from_result(jobs, result))
    lines = [f"| open clusters n | formula 1 + ⌈n/{h.lanes}⌉ × {bits // h.bits_per_cycle} | measured: token that "
             "joins nothing | measured: copy of slot 0 (early exit) | model |", "|---:|---:|---:|---:|---:|"]
    for n, job in zip(sizes, jobs):
        copy = next(measured) if n else None
        far = next(measured)
        model = [t.cycles for t in hcu_cycles_for(cfg, job.open_codes, job.token_codes).tokens]
        formula = hcu_worst_token_cycles(n, lanes=h.lanes, slices=bits // h.bits_per_cycle,
                                         pipeline_stages=h.pipeline_stages)
        lines.append(f"| {n} | {formula} | {far} | {copy if copy is not None else '–'} | "
                     f"{'= measured' if model == ([copy] if n else []) + [far] else model} |")
    return "\n".join(lines)


def per_case_measured():
    lines = ["| case | config hash | lanes × slices | P | tokens | cycles/token measured | = model | worst-case "
             "cycles/token | early-exit saving |", "|---|---|---|---:|---:|---:|---|---:|---:|"]
    for case in HCU_CASES:
        cfg = case.config()
        f = measure_cycles(cfg)
        m = f["measured"]
        lines.append(f"| {case.id} | `{cfg.hash()}` | {f['per_token']['lanes']} × {f['per_token']['slices']} | "
                     f"{f['per_token']['overhead']} | {m['tokens']} | {m['cycles_per_token']:.2f} | "
                     f"{'yes' if f['matches_model'] else 'NO'} | {m['worst_token_cycles'] / m['tokens']:.2f} | "
                     f"{f['early_exit_saving']:.1%} |")
    return "\n".join(lines)


def early_exit_statistics(n_jobs=100):
    lines = ["| case | tokens | mean open clusters | cycles/token worst | cycles/token | comparison cycles saved | "
             "groups ended early | tokens whose scan stopped early |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for case in HCU_CASES:
        cfg = case.config()
        hcu_jobs, _ = random_jobs(cfg, n_hcu=n_jobs, n_wtu=0, seed=3)
        h = cfg.dre.hcu
        toks = model_timings(cfg, hcu_jobs)
        worst, cyc = sum(t.worst for t in toks), sum(t.cycles for t in toks)
        saving, _ = early_exit_saving(toks, cyc, lanes=h.lanes, slices=cfg.resv.hash_bits // h.bits_per_cycle,
                                      early_exit=h.early_exit)
        groups = sum(t.groups for t in toks)
        lines.append(f"| {case.id} | {len(toks)} | {sum(t.open_slots for t in toks) / len(toks):.0f} | "
                     f"{worst / len(toks):.1f} | {cyc / len(toks):.1f} | "
                     f"{saving:.1%} | "
                     f"{sum(t.group_exits for t in toks) / max(1, groups):.1%} | "
                     f"{sum(t.scan_stop for t in toks) / len(toks):.1%} |")
    return "\n".join(lines)


def figures():
    from vrex.synth.generic import generic_figures
    from vrex.synth.verilog import emit

    lines = ["| case | config hash | generic cells | flip-flop bits | code memory + buffer bits | CMOS transistors | "
             "logic depth |", "|---|---|---:|---:|---:|---:|---:|"]
    for case in HCU_CASES:
        cfg = case.config()
        g = generic_figures(emit("hcu", cfg))
        bits = cfg.resv.hash_bits
        mem = cfg.hcu_capacity * bits + (cfg.hcu_frame_tokens - 1) * (bits + 2)
        lines.append(f"| {case.id} | `{cfg.hash()}` | {g['cells']} | {g['flops']} | {mem} | {g['transistors']} | "
                     f"{g['logic_depth']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", action="store_true", help="also generic Yosys figures of every case")
    args = ap.parse_args()
    v = tool_versions()
    print(f"git `{git_revision()}`; amaranth {v.get('py:amaranth')}, Verilator {v.get('verilator')}, "
          f"{v.get('iverilog')}, {str(v.get('yosys')).split(' (')[0]}, Python {v.get('python')}\n")
    edge = next(c for c in HCU_CASES if c.id.startswith("edge"))
    print(f"### Edge config (`{edge.config().hash()}`): cycles per token\n\n{edge_per_token(edge)}\n")
    print(f"### Every case: measure_cycles (RTL, amaranth.sim, no back-pressure)\n\n{per_case_measured()}\n")
    print(f"### Early exit on golden random_jobs (100 jobs, seed 3; exact cycle model)\n\n{early_exit_statistics()}\n")
    if args.figures:
        print(f"### Generic Yosys figures (`vrex synth --component hcu`)\n\n{figures()}\n")


if __name__ == "__main__":
    main()
