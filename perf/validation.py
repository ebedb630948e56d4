"""The GPU baseline models checked against published LLM-inference measurements (7–8B models, FP16/BF16, batch 1).

Each published point is simulated on the baseline platform of the edge (AGX Orin) or server (A100) config with the
measured model's shapes, everything resident in GPU memory (``perf.gpu.kv_tier = device``) and no vision tower:

- **prefill** of P prompt tokens = one step of P query tokens over an empty cache (attention over all P tokens,
  twice the causal average; ≤ 7% of the FLOPs at P = 2048), tokens/s = P / latency;
- **decode** at a context of C tokens = one decode step, tokens/s = 1 / latency.

Sources (the numbers and their settings, transcribed):

| platform | source | what |
|---|---|---|
| AGX Orin | TinyChat README (mit-han-lab/llm-awq, ``tinychat/README.md``, "Orin Results") | HuggingFace FP16 baseline, per-token generation latency: Llama-3-8B 96.24 ms, Llama-2-7B 86.80 ms (prompt > 500 tokens) |
| AGX Orin | same, "Orin Results (Llama-3-8B)" | FP16 time to first token with 32 question tokens after 512 / 1024 history tokens: 582.54 / 1048.11 ms (the FP16 baseline reuses no history KV, so we read it as a prefill of 544 / 1056 tokens) |
| AGX Orin | Jetson AI Lab "Tutorial - API Examples" (NVIDIA-AI-IOT/jetson-generative-ai-playground, ``docs/tutorial_api-examples.md``) | HuggingFace Transformers, Llama-2-7b-chat-hf FP16: 6.2 tokens/s (128 new tokens after a short chat prompt) |
| A100 | TensorRT-LLM ``docs/source/performance.md`` (v0.5 data, "Low Latency", A100 FP16) | LLaMA 7B, batch 1, first-token latency: 16 ms for 128 input tokens, 133 ms for 2048 |
| A100 | gpt-fast README (pytorch-labs/gpt-fast) and the PyTorch blog "Accelerating Generative AI with PyTorch II: GPT, Fast" | Llama-2-7B BF16, batch 1, A100-80GB power-limited to 330 W: 104.9 tokens/s compiled (torch.compile, static KV cache), 25.5 tokens/s for the plain eager implementation |

Each measurement is taken with its stack's host overhead: eager PyTorch pays ``perf.gpu.launch_overhead_us`` per
kernel (``perf.gpu.llm_kernels_per_layer`` of them per layer), a compiled / graph / TensorRT stack none.
``CALIBRATIONS`` names the measurement that sets each GPU factor of the configs (the DRAM efficiency from a fused
FP16 decoder, the host overhead from an eager one, AGX Orin's matmul efficiency from an FP16 prefill); the other
points are held out and check the model. The paper's baselines behave like the eager stacks: its AGX + FlexGen TPOT
at 1K is 1.9 × 89 ms ≈ 169 ms (eager HF: 161 ms) and its A100 + FlexGen TPOT 2.8 × 14 ms ≈ 39 ms (eager: 39 ms).
"""

from __future__ import annotations

from dataclasses import dataclass

from .dre_timing import dre_timing
from .memory import DeviceTier
from .model import System, simulate_step
from .platforms import gpu_platform
from .policies import policies
from .workload import Step, decode_step

__all__ = ["Measurement", "MEASUREMENTS", "MODELS", "validate"]

MODELS = {
    "llama-2-7b": {"model.name": "llama-2-7b", "model.layers": 32, "model.hidden": 4096, "model.query_heads": 32,
                   "model.kv_heads": 32, "model.head_dim": 128, "model.ffn_dim": 11008, "model.vocab": 32000},
    "llama-3-8b": {"model.name": "llama-3-8b", "model.layers": 32, "model.hidden": 4096, "model.query_heads": 32,
                   "model.kv_heads": 8, "model.head_dim": 128, "model.ffn_dim": 14336, "model.vocab": 128256},
}


@dataclass(frozen=True)
class Measurement:
    base: str          # edge (AGX Orin) or server (A100)
    model: str
    phase: str         # prefill | decode
    tokens: int        # prompt tokens (prefill) or context tokens (decode)
    tokens_per_s: float
    stack: str
    source: str
    host_overhead: bool   # eager dispatch (one host launch per kernel) or a graph / compiled stack (none)


_TINYCHAT = "TinyChat README (mit-han-lab/llm-awq tinychat/README.md)"
_JAL = "Jetson AI Lab, Tutorial - API Examples (docs/tutorial_api-examples.md)"
_TRT = "TensorRT-LLM docs/source/performance.md (v0.5, A100 FP16, batch 1)"
_GPTFAST = "gpt-fast README / PyTorch blog 'GPT, Fast' (A100-80GB at 330 W)"

MEASUREMENTS = (
    Measurement("edge", "llama-3-8b", "decode", 512, 1e3 / 96.24, "TinyChat FP16 (fused kernels)", _TINYCHAT, False),
    Measurement("edge", "llama-2-7b", "decode", 512, 1e3 / 86.80, "TinyChat FP16 (fused kernels)", _TINYCHAT, False),
    Measurement("edge", "llama-2-7b", "decode", 128, 6.2, "HF Transformers FP16, eager", _JAL, True),
    Measurement("edge", "llama-3-8b", "prefill", 544, 544 / 0.58254, "TinyChat FP16 baseline", _TINYCHAT, False),
    Measurement("edge", "llama-3-8b", "prefill", 1056, 1056 / 1.04811, "TinyChat FP16 baseline", _TINYCHAT, False),
    Measurement("server", "llama-2-7b", "prefill", 128, 128 / 0.016, "TensorRT-LLM FP16", _TRT, False),
    Measurement("server", "llama-2-7b", "prefill", 2048, 2048 / 0.133, "TensorRT-LLM FP16", _TRT, False),
    Measurement("server", "llama-2-7b", "decode", 128, 104.9, "gpt-fast BF16, torch.compile", _GPTFAST, False),
    Measurement("server", "llama-2-7b", "decode", 128, 25.5, "plain eager PyTorch BF16", _GPTFAST, True),
)

# which measurement sets which GPU factor (in this order; each fit sees the ones before it); the rest are held out
CALIBRATIONS = (
    ("edge", "perf.gpu.dram_efficiency", 0, (0.05, 1.0)),
    ("edge", "perf.gpu.matmul_efficiency", 4, (0.01, 1.0)),
    ("edge", "perf.gpu.launch_overhead_us", 2, (0.0, 1000.0)),
    ("server", "perf.gpu.dram_efficiency", 7, (0.05, 1.0)),
    ("server", "perf.gpu.launch_overhead_us", 8, (0.0, 1000.0)),
)


def _prefill_step(tokens: int) -> Step:
    return Step("question", "frame", tokens, 1, 0, False, 1)


def _model_tokens_per_s(base, m: Measurement) -> tuple[float, float, str]:
    """(model tokens/s, weight-floor tokens/s, config hash) of measurement ``m`` on ``base``."""
    ctx = max(m.tokens, 1)
    over = {**MODELS[m.model], "perf.gpu.kv_tier": "device", "model.vision_params": 0.0, "perf.kv_sizes": [ctx],
            "perf.batches": [1], "resv.recent_window_tokens": max(ctx, base.model.tokens_per_frame)}
    if not m.host_overhead:
        over["perf.gpu.launch_overhead_us"] = 0.0
    cfg = base.with_overrides(over, source=f"validation {m.source}")
    plat = gpu_platform(cfg)
    system = System("gpu:validation", plat.name, plat, policies(cfg)["flexgen"], "full", cfg.perf.overlap,
                    DeviceTier("capacity", 0.0, cfg.perf.gpu.dram_capacity_gb))
    step = _prefill_step(m.tokens) if m.phase == "prefill" else decode_step(cfg, m.tokens, 1)
    r = simulate_step(cfg, system, step, dre_timing(cfg))
    n = m.tokens if m.phase == "prefill" else 1
    return n / r.latency, n / r.weight_floor, cfg.hash()


def calibrate(bases: dict, measurements=MEASUREMENTS) -> dict:
    """The GPU factors that reproduce the calibration measurements: {(base, key): value}, solved in order by
    bisection (tokens/s is monotone in each factor)."""
    bases = dict(bases)
    out = {}
    for base_name, key, index, (lo, hi) in CALIBRATIONS:
        m = measurements[index]
        rising = not key.endswith("launch_overhead_us")      # efficiencies speed the model up, overhead slows it
        for _ in range(32):
            mid = (lo + hi) / 2
            tps = _model_tokens_per_s(bases[base_name].with_overrides({key: mid}), m)[0]
            if (tps > m.tokens_per_s) == rising:
                hi = mid
            else:
                lo = mid
        value = (lo + hi) / 2
        out[base_name, key] = value
        bases[base_name] = bases[base_name].with_overrides({key: value})
    return out


def validate(bases: dict, measurements=MEASUREMENTS) -> list[dict]:
    """Model vs measurement for every published point; ``bases`` maps "edge" / "server" to their configs."""
    roles = {i: f"calibrates {key}" for _, key, i, _ in CALIBRATIONS}
    rows = []
    for i, m in enumerate(measurements):
        base = bases[m.base]
        tps, floor, chash = _model_tokens_per_s(base, m)
        rows.append({"platform": base.perf.gpu.name, "model": m.model, "phase": m.phase, "tokens": m.tokens,
                     "stack": m.stack, "source": m.source, "host_overhead": m.host_overhead,
                     "measured_tok_s": m.tokens_per_s, "model_tok_s": tps, "rel": (tps - m.tokens_per_s) / m.tokens_per_s,
                     "floor_tok_s": floor, "config_hash": chash, "role": roles.get(i, "held out")})
    return rows
