"""The core's end-to-end bench: a golden ReSV session in the LXE's numerics, replayed on the core step by step.

:func:`make_bench` runs :func:`vrex.golden.core.core_session` on one layer of a trace (the frame steps) and builds a
:class:`CoreBench`: for every step the LXE SRAM lines the host writes first (the layer's hyperplanes once, then the
step's BF16 keys, values and queries), the command, and from the golden models the expected response, every HCU
assignment, WTU row and group beat the core forwards, and the digests of the device-memory regions after the
command (the KVMU's staging area and tables, the resident ring, the core's HC table) and of the used host pool; at
the end the full device and host images. Memories start filled with a seeded guard pattern, so a stray write shows.

The expected KVMU traffic comes from :class:`vrex.golden.dre.kvmu.KVMUModel` running the session's KVMU jobs (the
step's token descriptors and cluster masks) with the records the core writes (BF16 K then V of each token); the HC
table from :func:`vrex.golden.core.write_context` of the session's table after each step.
:mod:`vrex.sim.core.cocotb_test` plays the host on the streams and serves the four AXI ports with cocotbext-axi
memories (random pauses on every channel); :meth:`CoreBench.report` compares.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vrex.errors import VrexError
from vrex.golden.core import core_session, frame_steps, record_bytes, write_context
from vrex.golden.core.numerics import bf16_rows
from vrex.golden.dre.hcu.reference import hcu_assign
from vrex.golden.dre.kvmu import KVMUModel
from vrex.golden.dre.wtu.linear import select_row

from ..bench import pack
from vrex.sim.dre.kvmu.bench import digest, fill_pattern, final_diffs, region_diffs

__all__ = ["CoreBench", "make_bench", "sram_layout", "STREAMS"]

STREAMS = ("assignments", "rows", "selection")     # output streams the core forwards (checked beat by beat)
COUNTERS = ("busy_cycles", "exits_cycles", "hash_cycles", "cluster_cycles", "score_cycles", "select_cycles",
            "kvmu_cycles", "records_cycles", "dpe_beats", "vpe_beats", "commands")   # status.core, recorded by runs


@dataclass
class CoreBench:
    name: str
    config: dict
    layer: int
    setup: list                   # SRAM write commands (packed) before the first command: the hyperplanes
    jobs: list                    # per command: {"sram": [packed SRAM writes], "cmd": int, "expected": {...}}
    regions: dict                 # name -> [lo, hi] of the device memory, digested after every command
    final: dict                   # {"device": digest, "host": digest}
    statics: dict                 # control inputs (threshold, ratio / k, clear)
    fill_seed: int = 7
    p_valid: float = 0.7
    p_ready: float = 0.7
    p_pause: float = 0.2
    seed: int = 1
    max_cycles: int = 0
    fields: dict = field(default_factory=dict)   # per output stream: leaf fields for reports

    def to_json(self, path) -> None:
        Path(path).write_text(json.dumps(asdict(self)))

    @classmethod
    def from_json(cls, path) -> "CoreBench":
        d = json.loads(Path(path).read_text())
        d["fields"] = {k: [tuple(x) for x in v] for k, v in d.get("fields", {}).items()}
        return cls(**d)

    def cycle_budget(self) -> int:
        return self.max_cycles or 60000 + 20000 * len(self.jobs)

    def report(self, result: dict, limit: int = 6) -> str:
        """What differs between the golden expectation and the run (empty: the run matches)."""
        from ..bench import describe

        lines = []
        if result.get("timed_out"):
            lines.append(f"timed out after {result['cycles']} cycles in command {len(result['jobs'])} of "
                         f"{len(self.jobs)}")
        lines += [f"protocol: {p}" for p in result.get("protocol", [])[:limit]]
        got = result.get("jobs", [])
        bad = 0
        for i, job in enumerate(self.jobs):
            if i >= len(got):
                lines.append(f"command {i}: not completed")
                break
            exp, g = job["expected"], got[i]
            diffs = []
            if g["resp"] != exp["resp"]:
                diffs.append(f"response {g['resp']:#x} != expected {exp['resp']:#x}")
            for port in STREAMS:
                e, o = exp[port], g[port]
                if e != o:
                    k = next((j for j, (x, y) in enumerate(zip(e, o)) if x != y), min(len(e), len(o)))
                    f = self.fields.get(port, [("value", 0, 64)])
                    show = lambda v: "none" if v is None else describe(f, v)     # noqa: E731
                    diffs.append(f"{port} beat {k} of {len(e)} (got {len(o)}): expected "
                                 f"{show(e[k] if k < len(e) else None)}; got {show(o[k] if k < len(o) else None)}")
            diffs += region_diffs(exp["digests"], g["digests"])
            if diffs:
                bad += 1
                if bad <= limit:
                    lines.append(f"command {i} (step {job['step']}): " + "; ".join(diffs))
        if bad > limit:
            lines.append(f"... {bad} commands differ in all")
        if len(got) >= len(self.jobs):
            lines += final_diffs(self.final, result)
        return "\n".join(lines)


def sram_layout(cfg, tokens: int) -> dict:
    """Line addresses of the operands in the LXE SRAM for steps of up to ``tokens`` tokens (the host's choice; the
    command carries them): hyperplanes, keys, values, queries, then the score scratch."""
    m, x = cfg.model, cfg.lxe
    B = m.head_dim // x.dpe_inputs
    planes = 0
    keys = planes + m.kv_heads * cfg.resv.hash_bits * B
    values = keys + tokens * m.kv_heads * B
    queries = values + tokens * m.kv_heads * B
    scratch = queries + tokens * m.query_heads * B
    return {"planes": planes, "keys": keys, "values": values, "queries": queries, "scratch": scratch}


def scratch_lines(g, tokens: int, candidates: int, resident_keys: int = 0) -> int:
    """Scratch lines one context's S phase writes: per row (token × query head) its cluster scores (S_SCAN_END's
    stride: the larger of the score passes' lines and the WTU beats' lines) and, with ``resv.threshold_mass = row``,
    its ``resident_keys`` scores in groups of ``trees`` (docs/formats.md §Core)."""
    words = -(-candidates // g.wtu_lanes)
    lines = -(-words * 32 * g.wtu_lanes // g.line_bits)
    cluster = max(-(-candidates // g.trees) * g.lines_per_pass, lines)
    resident = -(-resident_keys // g.trees) * g.lines_per_pass if g.resident is not None else 0
    return tokens * g.group * (cluster + resident)


def _lines(rows: list[list[int]], n: int) -> list[int]:
    """BF16 vectors as SRAM lines of ``n`` elements (element e of a line at bits 16e..16e+15)."""
    out = []
    for row in rows:
        for b in range(0, len(row), n):
            out.append(sum(v << (16 * k) for k, v in enumerate(row[b:b + n])))
    return out


def _regions(cfg) -> dict:
    km, cm = cfg.kvmu_map, cfg.core_map
    return {"ring": [km.ring_base, km.staging_base], "staging": [km.staging_base, km.staging_base + km.staging_bytes],
            "kvmu_tables": [km.index_base, km.device_bytes], "core_table": [cm.entry_base, cm.end]}


def make_bench(cfg, *, n: int = 16, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, p_pause: float = 0.2,
               jobs=None, trace: str = "synthetic", layer: int = 0, name: str = "core", session=None,
               reference_hcu=hcu_assign, reference_wtu=select_row, fill_seed: int = 7, **_) -> CoreBench:
    """The bench of the first ``n`` frame steps of a ReSV session on ``layer`` of the ``trace`` (``synthetic`` or
    ``video``; ``jobs`` may name the trace instead). ``session``: a precomputed ``(trace, core_session steps)``.
    ``reference_hcu`` / ``reference_wtu``: the block references of the expected beats (mutants in the tests)."""
    from vrex.golden.traces.sources import TraceOptions, make_trace
    from vrex.hdl.core.geometry import CoreGeometry, command_layout, response_layout
    from vrex.hdl.dre.hcu import hcu_output_layout, hcu_token_bits
    from vrex.hdl.dre.wtu.layouts import wtu_group_layout, wtu_row_layout

    from ..bench import leaf_fields
    from vrex.sim.dre.hcu import expected_outputs
    from vrex.sim.dre.wtu.bench import _expected as wtu_expected
    from vrex.sim.dre.wtu.bench import bench_params

    g = CoreGeometry.from_config(cfg)
    if isinstance(jobs, str):
        trace = jobs
    if session is None:
        frames = max(1, n)
        tr = make_trace(cfg, trace, layers=[layer], options=TraceOptions(frames=frames, seed=seed))
        steps = core_session(cfg, tr, layer=layer, steps=min(frames, frame_steps(tr)))
    else:
        tr, steps = session
    data = tr.layers[layer]
    x, mdl = cfg.lxe, cfg.model
    tokens = max(s.tokens for s in steps)
    lay = sram_layout(cfg, tokens)
    n_el = x.dpe_inputs
    km, cm = cfg.kvmu_map, cfg.core_map
    lc, lr = command_layout(g), response_layout(g)
    la = hcu_output_layout(cfg.resv.hash_bits, cfg.hcu_capacity, hcu_token_bits(cfg.resv.recent_window_tokens))
    params = bench_params(cfg)
    wg = params.geometry
    lrow, lgrp = wtu_row_layout(wg), wtu_group_layout(wg)

    model = KVMUModel(cfg)
    model.device.write(0, fill_pattern(fill_seed, cm.end))
    model.host.write(0, fill_pattern(fill_seed + 1, km.host_bytes))
    regions = _regions(cfg)
    from vrex.golden.resv.hashing import hash_contexts

    planes = []
    for _, _, w in hash_contexts(cfg, layer, data, list(range(mdl.kv_heads))):
        planes += bf16_rows(w.T)
    from vrex.hdl.lxe.sram import sram_command_layout

    ls = sram_command_layout(x.sram_banks, x.sram_words, x.sram_word_bits)
    word = (1 << x.sram_word_bits) - 1

    def write(addr, line):
        return pack(ls, {"write": 1, "addr": addr, "mask": (1 << x.sram_banks) - 1,
                         "data": [(line >> (x.sram_word_bits * b)) & word for b in range(x.sram_banks)]})

    setup = [write(lay["planes"] + i, line) for i, line in enumerate(_lines(planes, n_el))]
    out = []
    for st in steps:
        t0, t1 = st.start, st.start + st.tokens
        for c in st.contexts:
            if c.wtu_job is not None:
                need = lay["scratch"] + scratch_lines(g, st.tokens, len(c.candidates),
                                                      g.sinks + t0 - st.window_start + st.tokens)
                if need > x.sram_words:
                    raise VrexError(f"step {st.index} needs {need} SRAM lines (operands and the score scratch) but "
                                    f"the LXE SRAM has {x.sram_words} (lxe.sram_kib = {x.sram_kib}); use shorter "
                                    "steps or a larger lxe.sram_kib.")
        sram = []
        for base, tensor in ((lay["keys"], data.k), (lay["values"], data.v), (lay["queries"], data.q)):
            flat = [row for t in range(t0, t1) for row in bf16_rows(tensor[t])]
            sram += [write(base + i, line) for i, line in enumerate(_lines(flat, n_el))]
        cmd = pack(lc, {"layer": layer, "step": st.index & 0xFFFF, "tokens": st.tokens,
                        "window_start": st.window_start, "segment_start": int(st.segment_start), **lay})
        assigns, rows, group = [], [], []
        kv_causes = kv_errors = 0
        for c in st.contexts:
            for e in expected_outputs(cfg, c.hcu_jobs, reference=reference_hcu):
                assigns.append(pack(la, e))
            if c.wtu_job is not None:
                r_beats, g_beats = wtu_expected(wg, c.wtu_job, params, reference_wtu)
                rows += [pack(lrow, b) for b in r_beats]
                group += [pack(lgrp, b) for b in g_beats]
            resp = model.run_job(c.kvmu_job)
            kv_causes |= resp.causes
            kv_errors += resp.errors
            records = [record_bytes(tr, layer, c.head, t) for t in range(t0, t1)]
            model.write_tokens(c.context, t0, records)
            write_context(model.device, cm, c.context, c.table)
        resp_bits = pack(lr, {"step": st.index & 0xFFFF, "causes": (1 << 3) if kv_causes else 0,
                              "kvmu_causes": kv_causes, "kvmu_errors": kv_errors & 0xFFFF})
        digests = {r: digest(model.device.read(lo, hi - lo)) for r, (lo, hi) in regions.items()}
        digests["host_used"] = digest(model.host.read(0, model.next_block * km.block_bytes))
        out.append({"step": st.index, "sram": sram, "cmd": cmd, "host_used": model.next_block * km.block_bytes,
                    "expected": {"resp": resp_bits, "assignments": assigns, "rows": rows, "selection": group,
                                 "digests": digests}})
    final = {"device": digest(model.device.read(0, cm.end)), "host": digest(model.host.read(0, km.host_bytes))}
    statics = {"threshold": cfg.resv.hamming_threshold, "clear": 0, **params.statics}
    return CoreBench(name, cfg.to_dict(), layer, setup, out, regions, final, statics, fill_seed=fill_seed,
                     p_valid=p_valid, p_ready=p_ready, p_pause=p_pause, seed=seed,
                     fields={"assignments": leaf_fields(la), "rows": leaf_fields(lrow), "selection": leaf_fields(lgrp)})
