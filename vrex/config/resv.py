"""The resv section: ReSV algorithm parameters (ReSVConfig)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .fields import _fail, _Section, param


@dataclass(frozen=True)
class ReSVConfig(_Section):
    """ReSV algorithm parameters; each resolved open question of the paper is one field (docs/decisions.md)."""

    hash_bits: int = param(32, "N_hp: random hyperplanes = hash code width in bits.", min=2, max=1024)
    hamming_threshold: int = param(
        7, "Th_hd: a token joins a cluster whose Hamming distance is strictly below this value.", min=0)
    wicsum_ratio: float = param(0.6, "Th_r-wics of frame steps: select clusters until the weighted sum exceeds "
                                "ratio x total.", min=0.0, max=1.0)
    text_wicsum_ratio: float = param(0.2, "Th_r-wics of question and answer steps (the WTU's ratio input is set per "
                                     "job).", min=0.0, max=1.0)
    wicsum_guard: float = param(0.0, "Margin added to the WTU's ratio input in both stages: the two ratios, or the two "
                                "p with threshold_mass = row (covers the fixed-point exp's error).", min=0.0, max=1.0)
    threshold_mass: Literal["offloaded", "row"] = param(
        "row", "What the WTU's ratio input is a share of: the row's whole softmax mass with the resident window's "
               "mass m_res counted (row, the default since issue 23: fetch the fewest clusters F with (m_res + mass of "
               "F) >= p x (m_res + all offloaded mass), p = row_mass_p / text_row_mass_p; a row whose resident "
               "tokens hold p fetches nothing), or the offloaded clusters' mass alone (offloaded, the rule before it; "
               "the ratios wicsum_ratio / text_wicsum_ratio). row needs the exp2 transform (or the golden-only exp) "
               "in WTU histogram mode; the linear and top-k rules need offloaded.",
        omit_from_hash_at="offloaded")
    row_mass_p: float = param(0.9, "p of frame steps with threshold_mass = row: the share of the row's softmax mass "
                              "(resident + fetched) kept, in (0, 1]; 0.9 chosen on the needle benchmark and the e2e "
                              "metrics (docs/results-accuracy.md).", omit_from_hash_at=0.9,
                              hashed_only_if=("threshold_mass", "row"))
    text_row_mass_p: float = param(0.99, "p of question and answer steps with threshold_mass = row, in (0, 1]; 0.99 "
                                   "chosen on the needle benchmark's tuning split and SmolLM2's 2K e2e trace, where "
                                   "0.9 lost 16 points on Qwen 1K (docs/decisions.md P1-P4; 0.9, the rule before, "
                                   "keeps the hashes of then).", omit_from_hash_at=0.9,
                                   hashed_only_if=("threshold_mass", "row"))
    hyperplanes: Literal["gaussian", "rademacher"] = param(
        "gaussian", "Hyperplane entry distribution (open question 2).")
    hyperplane_seed: int = param(0, "Seed of the hyperplanes (fixed per run).", min=0)
    hyperplane_sharing: Literal["per_layer_head", "per_layer", "global"] = param(
        "per_layer_head", "Whether each (layer, KV head) has its own hyperplanes (open question 2).")
    cluster_scope: Literal["kv_head", "layer"] = param(
        "kv_head", "Clusters per (layer, KV head), or one set per layer over concatenated KV heads (Q1).")
    hashed_key: Literal["post_rope", "pre_rope"] = param("post_rope", "Which key is hashed and averaged (Q3).")
    assignment: Literal["nearest", "first"] = param(
        "nearest", "Nearest open cluster under the threshold (ties to lowest id) or the first one (Q4).")
    cluster_code: Literal["first", "majority"] = param(
        "first", "Cluster code: the first member's code, or the bitwise majority of members (Q5).")
    score_transform: Literal["shift_min", "relu", "exp2", "exp"] = param(
        "exp2", "Non-negative transform of cluster scores before WiCSum (Q9): linear (shift_min, relu), the "
                     "WTU's fixed-point softmax weight 2^(s - max) on log2-unit scores (exp2), or float exp (golden "
                     "only).")
    selection: Literal["bucketed", "exact"] = param(
        "bucketed", "WiCSum rule used by ReSV: hardware bucketed early-exit, or exact sorted.")
    gqa_aggregation: Literal["group", "global"] = param(
        "group", "OR rows per GQA group (KV head) or over all rows of the layer (Q10).")
    recent_window_tokens: int = param(
        1024, "Device-resident recent window per stream (tokens); older KV is offloaded (Q18).", min=1)
    sink_tokens: int = param(0, "First tokens always attended (attention sinks).", min=0)
    include_current_frame: bool = param(True, "Current frame's tokens are always attended (Q8).")
    predict_from: Literal["same_layer", "previous_layer"] = param(
        "same_layer", "Queries that predict layer l's retrieval: layer l's own, or layer l-1's (Q7).")
    dense_layers: int = param(0, "First layers that use full attention instead of retrieval (Q7).", min=0)
    cluster_text_tokens: bool = param(True, "Question/answer tokens are hashed and clustered like frame tokens (Q11).")
    retrieval_scope: Literal["offloaded", "all"] = param(
        "offloaded", "WTU rows cover the clusters with offloaded members, each weighted by its offloaded member count "
                     "(offloaded), or every cluster of the context weighted by its full token count TC_j (all).")
    preload: Literal["reserve", "fill"] = param(
        "reserve", "HCU preload: the most recently touched open clusters up to the capacity minus the job's tokens, "
                   "so every token can open a cluster (reserve), or up to the capacity (fill; a full code memory then "
                   "follows dre.hcu.full_policy). Open clusters left out are closed for good.")
    row_overflow: Literal["tile", "error"] = param(
        "tile", "A WTU row with more clusters than the score memory holds: split it into consecutive tiles of row "
                "capacity, each thresholded on its own (tile), or stop with an error (error).")

    def _check(self):
        for key in ("row_mass_p", "text_row_mass_p"):
            p = getattr(self, key)
            if not 0.0 < p <= 1.0:
                _fail(f"resv.{key}", p, "must be in (0, 1]: it is the share of the row's attention mass (resident and "
                                        "fetched) that the selection keeps.")
        if self.hamming_threshold > self.hash_bits + 1:
            _fail("resv.hamming_threshold", self.hamming_threshold,
                  f"must be ≤ resv.hash_bits + 1 ({self.hash_bits + 1}); larger values accept every code.")
