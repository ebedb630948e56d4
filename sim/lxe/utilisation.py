"""DPE and VPE utilisation on a decoder layer's work at the config's shapes, from measured block timing.

The DPE is ``T`` MAC trees of ``n`` inputs in lockstep, each beside a weight memory of ``D`` words
(weight-stationary, hdl/lxe/dpe.py). An ``M x K`` by ``K x N`` matmul runs per *column tile* of ``T`` columns: the
tile's weights are loaded (``ceil(cols / L)`` load beats per weight word, ``L = lxe.dpe_load_trees``, for the
``Kb = ceil(K / n)`` words of a column) and the ``M`` rows stream ``Kb`` compute beats each; a ``K`` longer than
``D`` beats is split into ``ceil(Kb / D)`` chunks whose partial sums the VPE adds. Load and compute beats share
the input stream, one beat per cycle (measured: ``beats_per_cycle``), and the pipeline drains once per matmul
(``latency``). So the matmul takes ``(Kb · Σ_tiles ceil(cols / L) + M · ceil(N / T) · Kb) / beats_per_cycle +
latency`` cycles, and its utilisation is ``M·N·K / (cycles · T · n)``: with few rows per frame (``M`` =
``model.tokens_per_frame``) the loads are the cost of weight reuse. The VPE works ``L_v`` lanes per beat on vectors
of length ``v``: ``ceil(v / L_v)`` beats. tests/lxe/test_lxe.py checks this model against a cycle-accurate DPE / VPE
simulation on small shapes.

Work of one decoder layer for one frame (``M = model.tokens_per_frame`` query tokens, context ``C`` =
``resv.recent_window_tokens``): the QKV, O and FFN projections, attention scores and values over the context,
and the retrieval path (hash projections of the frame's keys, cluster scores against ``C / perf.tokens_per_cluster``
clusters per KV head). VPE work: two RMS norms, RoPE on Q and K, softmax exponentials, SwiGLU, residuals, hash-bit
signs, cluster-sum updates, score conversions and the DPE's partial sums.
"""

from __future__ import annotations

import math

__all__ = ["layer_matmuls", "layer_vector_ops", "dpe_utilisation", "vpe_utilisation", "matmul_cycles", "load_beats",
           "partial_sum_chunks"]


def layer_matmuls(cfg) -> dict[str, tuple[int, int, int, int]]:
    """name -> (count, M, K, N) of one decoder layer and one frame."""
    m, r = cfg.model, cfg.resv
    M, d, C = m.tokens_per_frame, m.head_dim, r.recent_window_tokens
    clusters = max(1, math.ceil(C / cfg.perf.tokens_per_cluster))
    return {
        "qkv": (1, M, m.hidden, (m.query_heads + 2 * m.kv_heads) * d),
        "attn_scores": (m.query_heads, M, d, C + M),
        "attn_values": (m.query_heads, M, C + M, d),
        "o_proj": (1, M, m.query_heads * d, m.hidden),
        "ffn_gate_up": (1, M, m.hidden, 2 * m.ffn_dim),
        "ffn_down": (1, M, m.ffn_dim, m.hidden),
        "hash_bits": (m.kv_heads, M, d, r.hash_bits),
        "cluster_scores": (m.kv_heads, M * m.group_size, d, clusters),
    }


RETRIEVAL = ("hash_bits", "cluster_scores")


def load_beats(K, N, *, trees, inputs, load_trees) -> int:
    """Load beats of an ``K x N`` weight operand: per column tile, ``ceil(cols / load_trees)`` beats per word."""
    full, rest = divmod(N, trees)
    return math.ceil(K / inputs) * (full * math.ceil(trees / load_trees) + math.ceil(rest / load_trees))


def matmul_cycles(M, K, N, *, trees, inputs, latency, load_trees=1, beats_per_cycle=1.0) -> float:
    compute = M * math.ceil(N / trees) * math.ceil(K / inputs)
    loads = load_beats(K, N, trees=trees, inputs=inputs, load_trees=load_trees)
    return (loads + compute) / beats_per_cycle + latency


def partial_sum_chunks(cfg, K) -> int:
    """Chunks of at most ``lxe.dpe_weight_words`` beats a dot product of length ``K`` is split into."""
    return math.ceil(math.ceil(K / cfg.lxe.dpe_inputs) / cfg.lxe.dpe_weight_words)


def dpe_utilisation(cfg, *, latency: int, beats_per_cycle: float) -> dict:
    T, n, L = cfg.lxe.dpe_trees, cfg.lxe.dpe_inputs, cfg.lxe.dpe_load_trees
    rows, tot_c, tot_macs, ret_c, ret_macs = {}, 0.0, 0, 0.0, 0
    for name, (count, M, K, N) in layer_matmuls(cfg).items():
        c = count * matmul_cycles(M, K, N, trees=T, inputs=n, latency=latency, load_trees=L,
                                  beats_per_cycle=beats_per_cycle)
        macs = count * M * K * N
        rows[name] = {"cycles": c, "utilisation": macs / (c * T * n)}
        tot_c, tot_macs = tot_c + c, tot_macs + macs
        if name in RETRIEVAL:
            ret_c, ret_macs = ret_c + c, ret_macs + macs
    return {"dpe_efficiency": tot_macs / (tot_c * T * n), "dpe_layer_cycles": tot_c,
            "dpe_retrieval_efficiency": ret_macs / (ret_c * T * n), "dpe_retrieval_cycles": ret_c, "dpe_matmuls": rows}


def layer_vector_ops(cfg) -> dict[str, tuple[int, int]]:
    """name -> (vectors, length) of the VPE's elementwise work for one decoder layer and one frame."""
    m, r = cfg.model, cfg.resv
    M, d, C = m.tokens_per_frame, m.head_dim, r.recent_window_tokens
    clusters = max(1, math.ceil(C / cfg.perf.tokens_per_cluster))
    return {
        "rms_norms": (2 * M, m.hidden),
        "rope": (M * (m.query_heads + m.kv_heads), d),
        "softmax_exp": (M * m.query_heads, C + M),
        "swiglu": (M, m.ffn_dim),
        "residuals": (2 * M, m.hidden),
        "hash_sign": (M * m.kv_heads, r.hash_bits),
        "cluster_sums": (M * m.kv_heads, d),
        "score_convert": (M * m.query_heads, clusters),
        **{f"partial_sums_{name}": (count * rows * (partial_sum_chunks(cfg, K) - 1), N)
           for name, (count, rows, K, N) in layer_matmuls(cfg).items() if partial_sum_chunks(cfg, K) > 1},
    }


def vpe_utilisation(cfg, *, latency: int, beats_per_cycle: float) -> dict:
    L = cfg.lxe.lanes
    rows, tot_c, tot_ops = {}, 0.0, 0
    for name, (vectors, length) in layer_vector_ops(cfg).items():
        c = vectors * math.ceil(length / L) / beats_per_cycle + latency
        rows[name] = {"cycles": c, "utilisation": vectors * length / (c * L)}
        tot_c, tot_ops = tot_c + c, tot_ops + vectors * length
    return {"vpe_efficiency": tot_ops / (tot_c * L), "vpe_layer_cycles": tot_c, "vpe_ops": rows}
