"""Stimulus for one VPE lane (hdl/lxe/vpe.py ``VpeLane``): the VPE bench's beats for a single lane."""

from __future__ import annotations

import random

from vrex.golden.lxe.vpe import OPS, vpe_beats
from vrex.hdl.lxe.vpe import lane_input_layout, lane_output_layout

from ..bench import StreamBench, leaf_fields, pack
from .vpe import random_beats

__all__ = ["make_bench"]


def make_bench(cfg, *, n: int = 200, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, jobs=None,
               name: str = "vpe_lane", beats: list[dict] | None = None) -> StreamBench:
    """``n`` random beats, or the one-lane ``beats`` given (:func:`.vpe.random_beats`' format)."""
    if jobs is not None:
        raise ValueError("the VPE lane bench takes random stimulus only")
    beats = beats if beats is not None else random_beats(1, n, random.Random(seed))
    res = vpe_beats(beats, 1, guard_bits=cfg.lxe.guard_bits, fixed_bits=cfg.dre.wtu.score_bits,
                    fixed_frac=cfg.dre.wtu.score_frac_bits)
    lin, lout = lane_input_layout(), lane_output_layout()
    ins = [{"op": OPS.index(b["op"]), "a": b["a"][0], "b": b["b"][0], "first": b["first"]} for b in beats]
    expected = [{"value": r[0][0].value, "bf16": r[0][0].bf16, "flag": r[0][0].flag} for r in res]
    return StreamBench(name=name, inputs={"i": [pack(lin, t) for t in ins]},
                       expected={"o": [pack(lout, e) for e in expected]}, fields={"o": leaf_fields(lout)},
                       p_valid=p_valid, p_ready=p_ready, seed=seed)
