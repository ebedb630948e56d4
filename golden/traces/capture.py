"""Record per-layer Q/K/V from a HuggingFace transformers model's forward pass, as a :class:`.trace.Trace`.

:func:`capture_trace` routes the model's attention through a recording function registered in transformers'
``AttentionInterface`` (name ``vrex_capture``; the attention mask follows the ``sdpa`` rules). Every decoder
layer's attention module calls it with the tensors attention really uses — queries and keys *after* RoPE (and
after any q/k norm), values — which it stores under the module's ``layer_idx`` and then computes attention with
transformers' ``sdpa`` function, so the forward pass is unchanged. The model's own attention implementation is
restored afterwards. Any model whose attention modules use the ``AttentionInterface`` dispatch works (Llama,
Qwen2/3, Mistral, Gemma, … in transformers 5.x); batch size must be 1.

The caller states the session layout as ``segments`` — ``(kind, length)`` rows with kind 0 frame, 1 question,
2 answer — whose lengths add up to the sequence length.
"""

from __future__ import annotations

import contextlib

import torch

from vrex.errors import TraceError

from vrex.golden.traces.trace import LayerQKV, Trace, segments_from_lengths

__all__ = ["capture_trace", "CAPTURE_NAME"]

CAPTURE_NAME = "vrex_capture"
_ACTIVE: list[dict] = []


def _transformers():
    try:
        import transformers
        from transformers import AttentionInterface
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    except ImportError:
        raise TraceError("capturing traces needs HuggingFace transformers; install it with: pip install "
                         "transformers (or pip install 'vrex[hf]').") from None
    return transformers, AttentionInterface, AttentionMaskInterface, sdpa_attention_forward, sdpa_mask


def _record(module, query, key, value, attention_mask, **kwargs):
    if _ACTIVE:
        layer = getattr(module, "layer_idx", None)
        if layer is None:
            raise TraceError(f"attention module {type(module).__name__} has no layer_idx; cannot tell its layer.")
        _ACTIVE[-1][int(layer)] = (query.detach(), key.detach(), value.detach())
    return _ACTIVE_SDPA[0](module, query, key, value, attention_mask, **kwargs)


_ACTIVE_SDPA: list = []


def _register():
    _, attn_iface, mask_iface, sdpa_forward, sdpa_mask = _transformers()
    if not _ACTIVE_SDPA:
        _ACTIVE_SDPA.append(sdpa_forward)
        attn_iface.register(CAPTURE_NAME, _record)
        mask_iface.register(CAPTURE_NAME, sdpa_mask)


@contextlib.contextmanager
def _capturing(model):
    _register()
    if not hasattr(model, "set_attn_implementation"):
        raise TraceError(f"{type(model).__name__} is not a transformers PreTrainedModel; cannot route its attention.")
    before = model.config._attn_implementation
    store: dict = {}
    model.set_attn_implementation(CAPTURE_NAME)
    _ACTIVE.append(store)
    try:
        yield store
    finally:
        _ACTIVE.pop()
        model.set_attn_implementation(before)


def capture_trace(model, segments, *, input_ids=None, inputs_embeds=None, layers=None, **forward_kwargs) -> Trace:
    """Run ``model`` once on ``input_ids`` or ``inputs_embeds`` (batch 1) and return its per-layer Q/K/V.

    ``segments``: ``(kind, length)`` rows covering the sequence. ``layers``: keep only these layer indices.
    Extra keyword arguments go to the model's forward (e.g. ``pixel_values`` for a vision-language model).
    """
    x = input_ids if input_ids is not None else inputs_embeds
    if x is None:
        raise TraceError("capture_trace needs input_ids or inputs_embeds.")
    if x.shape[0] != 1:
        raise TraceError(f"capture_trace records batch size 1; the input has shape {tuple(x.shape)}.")
    segs = segments_from_lengths(segments)
    T = x.shape[1]
    if segs[-1].end != T:
        raise TraceError(f"the segments cover {segs[-1].end} tokens but the input has {T}.")
    with torch.no_grad(), _capturing(model) as store:
        model(input_ids=input_ids, inputs_embeds=inputs_embeds, use_cache=False, **forward_kwargs)
    if not store:
        raise TraceError(f"{type(model).__name__} did not call transformers' attention interface; its attention "
                         "cannot be captured this way.")
    out = {}
    for l, (q, k, v) in sorted(store.items()):
        if layers is not None and l not in layers:
            continue
        out[l] = LayerQKV(q[0].transpose(0, 1).float().contiguous(), k[0].transpose(0, 1).float().contiguous(),
                          v[0].transpose(0, 1).float().contiguous())
    cfg = getattr(model, "config", None)
    meta = {"kind": "capture", "model": type(model).__name__,
            "model_config": getattr(cfg, "model_type", None), "weights": "as given by the caller"}
    trace = Trace(segs, out, meta)
    trace.check(source=f"capture of {type(model).__name__}")
    return trace
