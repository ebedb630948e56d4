"""The whole evaluation of one config: every system at every KV size and batch, plus the paper's special cases.

Systems: V-Rex running ReSV (the config's system) and the GPU baseline (``perf.gpu``) running FlexGen, InfiniGen,
InfiniGenP and ReKV. For each (KV size, batch) a frame step, a question step and a decode step are simulated; a
session (paper Fig. 4b / 14: ``perf.frames_per_session`` frames, one question, ``model.answer_tokens`` answer
tokens, at a constant KV size) is their weighted sum.

Special cases: the hardware ablation of Fig. 16 (GPU + FlexGen → GPU + ReSV → V-Rex with KVPU but token-order
layout → full V-Rex) at the largest KV size and batch 1, and the roofline of Fig. 18 (largest KV size, batch 4 or
the largest batch) for V-Rex, GPU + FlexGen and GPU + ReKV.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dre_timing import DRETiming, dre_timing
from .figures_input import Figures
from .golden_input import MeasuredRatios
from .model import StepResult, System, gpu_system, simulate_step, vrex_system
from .policies import BASELINES, policies
from .provenance import describe_inputs
from .workload import decode_step, frame_step, question_step, vision_work

__all__ = ["Point", "Evaluation", "evaluate", "session_totals", "session_weights"]


@dataclass
class Point:
    kv: int
    batch: int
    frame: dict = field(default_factory=dict)      # system key -> StepResult
    question: dict = field(default_factory=dict)
    decode: dict = field(default_factory=dict)


def session_weights(cfg) -> tuple[int, int, int]:
    """How often a session runs each step: (frames, question steps, answer tokens)."""
    return cfg.perf.frames_per_session, 1, cfg.model.answer_tokens


def session_totals(cfg, point: Point, key: str) -> tuple[float, float]:
    """(latency s, energy J) of one session of the whole batch."""
    f, q, d = point.frame[key], point.question[key], point.decode[key]
    frames, questions, answers = session_weights(cfg)
    return (frames * f.latency + questions * q.latency + answers * d.latency,
            frames * f.energy_total + questions * q.energy_total + answers * d.energy_total)


@dataclass
class Evaluation:
    cfg: object
    systems: dict
    points: list
    ablation: list                 # (key, label, StepResult)
    roofline: list                 # dicts
    dre: DRETiming
    sources: dict
    notes: list
    assumed: list = field(default_factory=list)

    @property
    def baseline_keys(self) -> list[str]:
        return [f"gpu:{p}" for p in BASELINES]


def _roofline_entry(cfg, system: System, r: StepResult) -> dict:
    """The LLM part of a frame step (decoder layers, LM head, prediction; the vision tower excluded) on the
    roofline of its platform."""
    plat = system.platform
    vision = vision_work(cfg, r.step)
    w = r.counters.work
    ops = w.matmul_flops + w.vector_ops - vision.matmul_flops - vision.vector_ops
    intensity = ops / max(w.dram_bytes - vision.dram_bytes, 1.0)
    attained = ops / (r.latency - r.exposed.get("vision", 0.0))
    roof = min(plat.peak_flops, intensity * plat.dram_bw)
    return {"system": system.key, "label": system.label, "intensity_op_per_byte": intensity,
            "attained_flops": attained, "roof_flops": roof, "share_of_roof": attained / roof,
            "peak_flops": plat.peak_flops, "dram_bw": plat.dram_bw, "link_bw": plat.link_bw,
            "link_intensity_op_per_byte": ops / max(r.counters.read.moved, 1.0)}


def evaluate(cfg, measured: MeasuredRatios | None = None, figures: Figures | None = None, *,
             strict: bool = False) -> Evaluation:
    """Every system at every KV size and batch of ``cfg.perf``, plus the ablation and roofline cases.

    ``measured`` (golden reports) and ``figures`` (figures JSON) replace the config's values where they have them;
    with ``strict`` an input made with another config is refused (:class:`~vrex.errors.UsageError`).
    """
    pols = policies(cfg, measured)
    dre = dre_timing(cfg, figures)
    kvmu = measured.kvmu() if measured is not None else None
    systems = {"vrex": vrex_system(cfg, pols, figures=figures, kvmu=kvmu)}
    for name in BASELINES:
        s = gpu_system(cfg, pols, name)
        systems[s.key] = s
    points = []
    for batch in cfg.perf.batches:
        for kv in cfg.perf.kv_sizes:
            pt = Point(kv, batch)
            for key, s in systems.items():
                pt.frame[key] = simulate_step(cfg, s, frame_step(cfg, kv, batch), dre)
                pt.question[key] = simulate_step(cfg, s, question_step(cfg, kv, batch), dre)
                pt.decode[key] = simulate_step(cfg, s, decode_step(cfg, kv, batch), dre)
            points.append(pt)

    kv_max = max(cfg.perf.kv_sizes)
    vrex_name = systems["vrex"].platform.name
    ablation_systems = {
        "gpu_flexgen": systems["gpu:flexgen"],
        "gpu_resv": gpu_system(cfg, pols, "resv"),
        "vrex_kvpu": vrex_system(cfg, pols, layout="token_scattered", key="vrex_kvpu",
                                 label=f"{vrex_name} + KVPU (token order)", figures=figures, kvmu=kvmu),
        "vrex_all": vrex_system(cfg, pols, layout="cluster_contiguous", key="vrex_all",
                                label=f"{vrex_name} + KVPU + KVMU (cluster-contiguous)", figures=figures, kvmu=kvmu),
    }
    by_point = {(p.kv, p.batch): p for p in points}

    def frame_at_kv_max(key, system, batch):
        """The frame step at the largest KV size: from the grid when it has the point, else simulated."""
        pt = by_point.get((kv_max, batch))
        if pt is not None and key in pt.frame:
            return pt.frame[key]
        return simulate_step(cfg, system, frame_step(cfg, kv_max, batch), dre)

    ablation = [(key, s.label, frame_at_kv_max(s.key, s, 1)) for key, s in ablation_systems.items()]

    roof_batch = 4 if 4 in cfg.perf.batches else max(cfg.perf.batches)
    roofline = []
    for key in ("vrex", "gpu:flexgen", "gpu:rekv"):
        r = frame_at_kv_max(key, systems[key], roof_batch)
        entry = _roofline_entry(cfg, systems[key], r)
        entry.update(kv=kv_max, batch=roof_batch)
        roofline.append(entry)

    sources, notes, assumed = describe_inputs(cfg, measured, figures, systems, dre, strict=strict,
                                              kv_max_candidates=cfg.kv_candidates(kv_max))
    return Evaluation(cfg, systems, points, ablation, roofline, dre, sources, notes, assumed)
