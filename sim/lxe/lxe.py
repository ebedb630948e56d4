"""Stimulus for the LXE top (hdl/lxe/lxe.py): a DPE bench, a VPE bench and an SRAM bench side by side on the
top's renamed ports (independent random traffic on each), every output checked against its golden model."""

from __future__ import annotations

import random

from vrex.hdl.lxe.sram import sram_command_layout, sram_data_layout

from ..bench import StreamBench, leaf_fields, pack
from . import dpe as dpe_bench
from . import vpe as vpe_bench

__all__ = ["make_bench", "sram_bench", "measure_cycles"]


def sram_bench(cfg, *, n: int, seed: int, p_valid: float, p_ready: float) -> StreamBench:
    """Line writes (random bank masks) and reads in one command stream; the golden is a dict of lines."""
    x = cfg.lxe
    rng = random.Random(seed)
    lines: dict[int, list[int]] = {}
    cmds, expected = [], []
    addrs = [0, x.sram_words - 1] + [rng.randrange(x.sram_words) for _ in range(6)]
    for _ in range(n):
        addr = rng.choice(addrs)
        if rng.random() < 0.5:
            data = [rng.getrandbits(x.sram_word_bits) for _ in range(x.sram_banks)]
            mask = rng.getrandbits(x.sram_banks) | (1 if rng.random() < 0.3 else 0)
            old = lines.get(addr, [0] * x.sram_banks)
            lines[addr] = [data[b] if mask >> b & 1 else old[b] for b in range(x.sram_banks)]
            cmds.append({"write": 1, "addr": addr, "data": data, "mask": mask})
        elif addr in lines:
            cmds.append({"write": 0, "addr": addr, "data": [0] * x.sram_banks, "mask": 0})
            expected.append({"data": lines[addr]})
    lc, ld = sram_command_layout(x.sram_banks, x.sram_words, x.sram_word_bits), sram_data_layout(x.sram_banks,
                                                                                                 x.sram_word_bits)
    return StreamBench(name="sram", inputs={"cmd": [pack(lc, c) for c in cmds]},
                       expected={"rdata": [pack(ld, e) for e in expected]}, fields={"rdata": leaf_fields(ld)},
                       p_valid=p_valid, p_ready=p_ready, seed=seed)


def make_bench(cfg, *, n: int = 100, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, jobs=None,
               name: str = "lxe") -> StreamBench:
    d = dpe_bench.make_bench(cfg, n=n, seed=seed, p_valid=p_valid, p_ready=p_ready, jobs=jobs)
    v = vpe_bench.make_bench(cfg, n=n, seed=seed + 1, p_valid=p_valid, p_ready=p_ready)
    s = sram_bench(cfg, n=n, seed=seed + 2, p_valid=p_valid, p_ready=p_ready)
    def rename(prefix, dct):
        return {f"{prefix}_{k}": v for k, v in dct.items()}

    parts = (("dpe", d), ("vpe", v), ("sram", s))
    return StreamBench(name=name, inputs={k: v for p, b in parts for k, v in rename(p, b.inputs).items()},
                       expected={k: v for p, b in parts for k, v in rename(p, b.expected).items()},
                       fields={k: v for p, b in parts for k, v in rename(p, b.fields).items()},
                       p_valid=p_valid, p_ready=p_ready, seed=seed,
                       max_cycles=d.cycle_budget() + v.cycle_budget() + s.cycle_budget())


def measure_cycles(cfg, *, cycles_of=None) -> dict:
    """The LXE's cycle figures: its DPE's and VPE's (the top adds no latency), with both utilisations.
    ``cycles_of(part)``: the part's figures measured already (the figures flow's), else they are measured here."""
    dpe, vpe = (cycles_of(p) for p in ("dpe", "vpe")) if cycles_of else (dpe_bench.measure_cycles(cfg),
                                                                          vpe_bench.measure_cycles(cfg))
    return {"component": "lxe", "config": cfg.name, "config_hash": cfg.hash(),
            "dpe_efficiency": dpe["dpe_efficiency"], "vpe_efficiency": vpe["vpe_efficiency"],
            "dpe_retrieval_efficiency": dpe["dpe_retrieval_efficiency"], "dpe": dpe, "vpe": vpe}
