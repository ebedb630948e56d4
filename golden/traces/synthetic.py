"""Synthetic streaming-video token embeddings with controllable temporal and spatial redundancy (seeded).

Each frame has ``tokens_per_frame`` token slots (spatial positions). A *scene* splits the slots into ``objects``
contiguous runs (random cut points), each run showing one object with a prototype vector ``μ_o``. From frame
to frame, within a scene::

    μ_o ← τ·μ_o + √(1-τ²)·ξ          (the object drifts slowly)
    η_p ← τ·η_p + √(1-τ²)·ξ          (per-slot detail, temporally correlated)
    e_p = μ_o(p) + spread·η_p         (token embedding of slot p)

with ``ξ ~ N(0, I)`` fresh each time and ``τ = temporal``. ``temporal`` controls the redundancy between frames
(1 = frozen video, 0 = independent frames); ``objects`` and ``spread`` control the spatial clustering inside a
frame (few objects and a small spread: many near-identical tokens per frame). With probability ``scene_cut`` a
frame starts a new scene (new layout, prototypes and details), as at a cut in real video. Text tokens are
independent ``N(0, I)`` vectors. All vectors are RMS-normalised by the transformer.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from vrex.golden.traces.transformer import seeded_generator

__all__ = ["SyntheticSpec", "synthetic_frame_embeddings"]


@dataclass(frozen=True)
class SyntheticSpec:
    temporal: float = 0.9      # τ: frame-to-frame correlation of prototypes and details
    objects: int = 0           # objects (spatial clusters) per frame; 0 = max(1, tokens_per_frame // 3)
    spread: float = 0.5        # detail amplitude relative to the unit prototype
    scene_cut: float = 0.02    # probability that a frame starts a new scene

    def resolved_objects(self, tokens_per_frame: int) -> int:
        return min(tokens_per_frame, self.objects or max(1, tokens_per_frame // 3))

    def describe(self, tokens_per_frame: int) -> dict:
        return {**asdict(self), "objects": self.resolved_objects(tokens_per_frame)}


def synthetic_frame_embeddings(spec: SyntheticSpec, frames: int, tokens_per_frame: int, width: int,
                               seed: int) -> torch.Tensor:
    """Embeddings ``(frames, tokens_per_frame, width)`` following the module docstring's process."""
    if not 0.0 <= spec.temporal <= 1.0 or not 0.0 <= spec.scene_cut <= 1.0 or spec.spread < 0:
        raise ValueError("temporal and scene_cut must be in [0, 1] and spread ≥ 0")
    gen = seeded_generator("synthetic", seed)
    n, n_obj, tau = tokens_per_frame, spec.resolved_objects(tokens_per_frame), spec.temporal
    keep, fresh = tau, math.sqrt(max(0.0, 1 - tau * tau))
    out = torch.empty(frames, n, width)
    layout = proto = detail = None
    for f in range(frames):
        if f == 0 or torch.rand((), generator=gen).item() < spec.scene_cut:
            cuts = torch.sort(torch.randperm(n - 1, generator=gen)[: n_obj - 1] + 1).values.tolist()
            layout = torch.zeros(n, dtype=torch.long)
            for c in cuts:
                layout[c:] += 1
            proto = torch.randn(n_obj, width, generator=gen)
            detail = torch.randn(n, width, generator=gen)
        else:
            proto = keep * proto + fresh * torch.randn(n_obj, width, generator=gen)
            detail = keep * detail + fresh * torch.randn(n, width, generator=gen)
        out[f] = proto[layout] + spec.spread * detail
    return out
