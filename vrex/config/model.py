"""The model section: LLM shapes (ModelConfig)."""

from __future__ import annotations

from dataclasses import dataclass

from .fields import _fail, _Section, param


@dataclass(frozen=True)
class ModelConfig(_Section):
    name: str = param("llama-3-8b", "LLM backbone name (documentation only).")
    layers: int = param(32, "Decoder layers.", min=1)
    hidden: int = param(4096, "Hidden size.", min=1)
    query_heads: int = param(32, "Query heads per layer.", min=1)
    kv_heads: int = param(8, "KV heads per layer (GQA groups).", min=1)
    head_dim: int = param(128, "Head dimension d.", min=1)
    ffn_dim: int = param(14336, "FFN intermediate size (SwiGLU: gate, up, down).", min=1)
    vocab: int = param(128256, "Vocabulary size (LM head).", min=1)
    weight_bytes: float = param(2.0, "Bytes per weight (BF16 = 2).", min=0.125, max=8)
    kv_bytes: float = param(2.0, "Bytes per K or V element (BF16 = 2).", min=0.125, max=8)
    tokens_per_frame: int = param(10, "Visual tokens per frame (VideoLLM-online live1+: 1 CLS + 3x3).", min=1)
    vision_params: float = param(0.428e9, "Vision tower + projector parameters (SigLIP-L/16-384).", min=0)
    vision_tokens: int = param(577, "Tokens the vision tower processes per frame (24x24 patches + CLS).", min=1)
    question_tokens: int = param(25, "Question tokens per turn (COIN average, paper Fig. 4b).", min=1)
    answer_tokens: int = param(39, "Answer tokens per turn (COIN average, paper Fig. 4b).", min=1)

    def _check(self):
        if self.query_heads % self.kv_heads:
            _fail("model.query_heads", self.query_heads,
                  f"must be a multiple of model.kv_heads ({self.kv_heads}) for grouped-query attention.")

    @property
    def group_size(self) -> int:
        """Query heads per KV head."""
        return self.query_heads // self.kv_heads

    @property
    def kv_bytes_per_token(self) -> float:
        """K and V bytes of one token over all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.kv_bytes

    @property
    def layer_params(self) -> int:
        """Weights of one decoder layer: Q, K, V, O projections and the SwiGLU FFN (norm weights neglected)."""
        qkv = self.hidden * (self.query_heads + 2 * self.kv_heads) * self.head_dim
        return qkv + self.query_heads * self.head_dim * self.hidden + 3 * self.hidden * self.ffn_dim

    @property
    def lm_head_params(self) -> int:
        """Weights of the LM head (vocab x hidden; Llama-3 does not tie it to the embedding)."""
        return self.vocab * self.hidden

    @property
    def weight_bytes_total(self) -> float:
        """Bytes of every weight the accelerator streams: decoder layers, LM head, vision tower + projector."""
        return ((self.layers * self.layer_params + self.lm_head_params) * self.weight_bytes
                + self.vision_params * self.weight_bytes)
