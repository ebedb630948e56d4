"""The paper's own numbers (V-Rex, HPCA 2026), transcribed with the figure or table each comes from.

Values tagged ``[Fig]`` were read from figure labels and are less certain than values stated in the text or tables.
Ranges are (low, high) over the KV sizes 1K–40K. KV sizes are the paper's nominal 1K/5K/10K/20K/40K, keyed here by
the token counts of ``perf.kv_sizes`` (1K = 1024). Nothing in the model reads these numbers: they are printed
beside ours and written into the JSON so the difference can be seen.
"""

from __future__ import annotations

__all__ = ["PAPER", "PAPER_MODEL", "paper_for"]

_K = {"1K": 1024, "5K": 5120, "10K": 10240, "20K": 20480, "40K": 40960}


def _sizes(*values):
    return dict(zip(_K.values(), values))


PAPER = {
    "V-Rex8": {
        "gpu": "Jetson AGX Orin",
        # Fig. 13 (text, §VI-B): V-Rex8 per-frame latency at batch 1
        "frame_latency_ms": {1: _sizes(121, 123, 198, 200, 254)},
        "frame_latency_src": "Fig. 13 / §VI-B",
        "fps_range": {1: (3.9, 8.3)},                        # abstract, §VI-B
        "frame_speedup_flexgen": {1: (2.2, 7.3), 4: (2.1, 13.8)},   # §VI-B, vs AGX Orin + FlexGen
        "tpot_ms_range": {1: (89, 97)},                      # §VI-B, text generation
        "text_speedup_flexgen": {1: (1.9, 15.1)},            # §VI-B
        # Fig. 13 energy-efficiency gains over AGX + FlexGen, per size [Fig]; ranges from §VI-C [P]
        "frame_energy_gain": {1: _sizes(5.5, 5.1, 5.0, 7.6, 10.2), 4: _sizes(3.1, 4.2, 4.9, 7.8, 12.8)},
        "frame_energy_gain_range": {1: (5.5, 10.2), 4: (3.1, 12.8)},
        "text_energy_gain": {1: _sizes(4.3, 5.6, 10.6, 13.2, 18.5)},
        "text_energy_gain_range": {1: (4.3, 18.5)},
        # Fig. 14: end-to-end (26 frames, 25 question, 39 answer tokens) latency reduction vs AGX + FlexGen [Fig]
        "e2e_speedup": _sizes(2.0, 2.0, 2.6, 3.9, 5.4),
        # Fig. 16: hardware ablation at 40K, batch 1, frame processing, vs AGX + FlexGen
        "ablation": {"kv": 40960, "batch": 1,
                     "rows": {"gpu_resv": (2.8, 4.4), "vrex_kvpu": (6.0, 9.2), "vrex_all": (8.1, 10.2)},
                     "gpu_resv_prediction_share": 0.48, "kvpu_prediction_share": 0.005},
        # Fig. 18: roofline at 40K, batch 4, frame processing; share of the attainable performance
        "roofline": {"kv": 40960, "batch": 4, "intensity_op_per_byte": 15.2,
                     "shares": {"vrex": 0.715, "flexgen": 0.066, "rekv": 0.15}},
        "system_power_w": 35.0,                              # Table I (V-Rex, DRAM, PCIe, storage)
        "gpu_power_w": 40.0,
    },
    "V-Rex48": {
        "gpu": "A100",
        "frame_latency_ms": {},
        "frame_latency_range_ms": {1: (20, 48)},             # §VI-B
        "frame_speedup_flexgen": {1: (2.6, 7.3), 8: (3.4, 19.7)},
        "tpot_ms_range": {1: (14, 15)},
        "text_speedup_flexgen": {1: (2.8, 16.8)},
        "frame_energy_gain": {1: _sizes(9.0, 9.1, 9.4, 17.7, 29.7), 8: _sizes(5.9, 12.3, 15.4, 26.9, 52.2)},
        "frame_energy_gain_range": {1: (9.0, 29.7), 8: (5.9, 52.2)},
        # the 10K and 20K labels are bracketed in the figure (meaning unknown)
        "text_energy_gain": {1: _sizes(13.2, 15.0, 24.9, 43.4, 70.6)},
        "text_energy_gain_range": {1: (13.2, 70.6)},
        "system_power_w": 203.68,
        "gpu_power_w": 300.0,
    },
}


PAPER_MODEL = "llama-3-8b"


def paper_for(cfg) -> dict:
    """The paper's numbers for the config's system (``V-Rex8``, ``V-Rex48`` of Table I) when it runs the paper's
    model (Llama-3-8B); {} otherwise, since the paper's numbers say nothing about other systems or models."""
    if cfg.model.name != PAPER_MODEL:
        return {}
    return PAPER.get(cfg.system.name, {})
