"""Sub-command ``vrex sim``: run a component's bench on amaranth.sim, Verilator or Icarus."""

from __future__ import annotations

import sys

from vrex.cli import add_config_option, add_set_option, load_config_arg
from vrex.errors import positive_int, stall_probability

__all__ = ["register"]


def _cmd_sim(args) -> int:
    from vrex.hdl.registry import get_component
    from vrex.paths import build_dir, safe_name

    cfg = load_config_arg(args)
    spec = get_component(args.component)
    from .benches import bench_for

    jobs = None
    if args.trace:
        from .benches import trace_jobs

        jobs = trace_jobs(cfg, args.component, args.trace, frames=args.frames, seed=args.seed,
                          max_jobs=args.transactions)
    bench = bench_for(args.component)(cfg, n=args.transactions, seed=args.seed, p_valid=1 - args.stall,
                                      p_ready=1 - args.stall, jobs=jobs)
    work = build_dir("sim", safe_name(f"cli-{args.component}-{cfg.hash()}-{args.sim}-{args.seed}"))
    from .benches import runs_itself

    if runs_itself(args.component):
        return _run_own_bench(args, bench, work)
    n_in = sum(len(v) for v in bench.inputs.values())
    if args.sim == "amaranth":
        from .amaranth_run import run_amaranth

        _progress(f"running {n_in} input transactions on amaranth.sim")
        vcd = work / "dump.vcd" if args.waves else None
        result = run_amaranth(spec.build(cfg), bench, vcd_path=vcd)
        if vcd:
            result.extra["waves"] = str(vcd)
    else:
        from vrex.synth.verilog import emit

        from .runner import run_cocotb

        _progress(f"generating Verilog of {args.component} (config {cfg.name}, hash {cfg.hash()})")
        emitted = emit(args.component, cfg)
        _progress(f"building with {args.sim} (cached per config; the first Verilator build takes 5-60 s), then "
                  f"running {n_in} input transactions")
        result = run_cocotb(emitted, bench, args.sim, work, waves=args.waves)
    report = result.report(bench)
    n_out = sum(len(v) for v in bench.expected.values())
    waves = result.extra.get("waves")
    if args.waves:
        print(f"waveforms: {waves} (open it with gtkwave or surfer)" if waves else
              "waveforms: none were written (see the simulator log in the work folder)")
    if report:
        print(report)
        print(f"FAIL: {args.component} on {args.sim} (work folder {work})")
        return 1
    print(f"PASS: {args.component} on {result.simulator}: {n_out} output transactions match the golden model "
          f"in {result.cycles} cycles (seed {args.seed}, stall probability {args.stall}); work folder {work}")
    return 0


def _progress(what: str) -> None:
    print(f"sim: {what} ...", file=sys.stderr, flush=True)
def _run_own_bench(args, bench, work) -> int:
    """A bench with AXI ports (the KVMU): cocotb with cocotbext-axi memory models, compared job by job."""
    from vrex.errors import UsageError
    from vrex.synth.verilog import emit

    from .benches import _module

    if args.sim == "amaranth":
        raise UsageError(f"the {args.component} bench needs cocotb's AXI memory models; use --sim verilator or icarus.")
    cfg = load_config_arg(args)
    result = _module(args.component).run_bench(emit(args.component, cfg), bench, args.sim, work, waves=args.waves)
    report = bench.report(result)
    if report:
        print(report)
        print(f"FAIL: {args.component} on {args.sim} (work folder {work})")
        return 1
    print(f"PASS: {args.component} on {args.sim}: {len(bench.jobs)} jobs (responses, AXI bursts of every port, memory "
          f"images) match the golden model in {result['cycles']} cycles ({result['cycles'] / max(result['sim_seconds'], 1e-9):.0f} "
          f"cycles/s, seed {args.seed}, stall probability {args.stall}); work folder {work}")
    return 0


def register(sub) -> None:
    s = sub.add_parser("sim", help="simulate a component against its golden model",
                       description="Drive a component with randomized stimulus under random back-pressure and "
                                   "compare every output transaction with the golden model. With --trace the stimulus is the "
                                   "block jobs recorded from a streaming session.")
    s.add_argument("--component", required=True, metavar="NAME", help="component name")
    add_config_option(s)
    add_set_option(s, "--set dre.wtu.lanes=8 (the work folder follows the resulting config's hash)")
    s.add_argument("--sim", choices=["amaranth", "verilator", "icarus"], default="verilator",
                   help="simulator (default: verilator)")
    s.add_argument("--seed", type=int, default=1, help="stimulus and traffic seed (default 1)")
    s.add_argument("--transactions", "-n", type=positive_int, default=500,
                   help="input transactions (default 500); with --trace: at most N recorded jobs of each kind")
    s.add_argument("--stall", type=stall_probability, default=0.3,
                   help="probability that an input idles / an output stalls in a cycle, 0 ≤ p < 1 (default 0.3)")
    s.add_argument("--trace", metavar="synthetic|video|PATH",
                   help="trace-driven stimulus: the block jobs a ReSV session hands to this block on the synthetic "
                        "or real-video trace (or a user trace file), or a saved jobs JSON file")
    s.add_argument("--frames", type=positive_int, metavar="N", help="with --trace: frames of the session (default: the "
                                                            "golden model's default)")
    s.add_argument("--waves", action="store_true",
                   help="write waveforms into the work folder (build/sim/...): dump.fst with Verilator, dump.vcd with "
                        "Icarus or amaranth.sim; signal names are the design's Amaranth names")
    s.set_defaults(func=_cmd_sim)
