"""Streaming-session traces: per-layer post-RoPE Q/K/V of a token sequence cut into frames and text turns.

A :class:`Trace` is what every retrieval policy and metric of the golden model reads. It holds, for each stored
decoder layer ``l``, the post-RoPE queries ``q`` ``(T, query_heads, head_dim)``, keys ``k`` and values ``v``
``(T, kv_heads, head_dim)`` of all ``T`` tokens of a session, and the *segments* that cut the sequence into
frames (each frame's tokens are one prefill step), questions and answers (text turns).

File format (one naming convention for ``.pt``, ``.npz`` and ``.safetensors``; docs/golden.md §Traces):

===================  ==============================  ==========================================================
tensor               shape                           meaning
===================  ==============================  ==========================================================
``q.<l>``            ``(T, query_heads, head_dim)``  post-RoPE queries of layer ``l`` (any float dtype)
``k.<l>``            ``(T, kv_heads, head_dim)``     post-RoPE keys of layer ``l``
``v.<l>``            ``(T, kv_heads, head_dim)``     values of layer ``l``
``segments``         ``(S, 2)`` integer              rows ``(kind, length)``: kind 0 = frame, 1 = question,
                                                     2 = answer; lengths sum to ``T``
``qpre.<l>``         like ``q.<l>``                  optional pre-RoPE queries (``resv.hashed_key: pre_rope``)
``kpre.<l>``         like ``k.<l>``                  optional pre-RoPE keys
===================  ==============================  ==========================================================

Layers may be any subset (``q.3``, ``k.3``, ``v.3`` without layer 0 is fine); every stored layer needs all three
of ``q``, ``k``, ``v``. A ``.pt`` file is a ``dict`` of tensors (loaded with ``weights_only=True``). Bad files
raise :class:`vrex.errors.TraceError` naming the file, the offending tensor and its shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

from vrex.errors import TraceError

__all__ = ["FRAME", "QUESTION", "ANSWER", "KIND_NAMES", "Segment", "LayerQKV", "Trace", "load_trace",
           "save_trace", "segments_from_lengths", "trace_tensors", "TRACE_SUFFIXES"]

FRAME, QUESTION, ANSWER = 0, 1, 2
KIND_NAMES = {FRAME: "frame", QUESTION: "question", ANSWER: "answer"}
TRACE_SUFFIXES = (".pt", ".npz", ".safetensors")
_NAME = re.compile(r"^(q|k|v|qpre|kpre)\.(\d+)$")


@dataclass(frozen=True)
class Segment:
    kind: int        # FRAME, QUESTION or ANSWER
    start: int       # first token index
    length: int

    @property
    def end(self) -> int:
        return self.start + self.length


@dataclass
class LayerQKV:
    q: torch.Tensor                  # (T, Hq, d) post-RoPE
    k: torch.Tensor                  # (T, Hkv, d) post-RoPE
    v: torch.Tensor                  # (T, Hkv, d)
    q_pre: torch.Tensor | None = None
    k_pre: torch.Tensor | None = None


@dataclass
class Trace:
    """A session: segments plus per-layer Q/K/V. ``meta`` records provenance (JSON-serialisable)."""

    segments: list[Segment]
    layers: dict[int, LayerQKV]
    meta: dict = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.segments[-1].end if self.segments else 0

    @property
    def layer_ids(self) -> list[int]:
        return sorted(self.layers)

    @property
    def query_heads(self) -> int:
        return next(iter(self.layers.values())).q.shape[1]

    @property
    def kv_heads(self) -> int:
        return next(iter(self.layers.values())).k.shape[1]

    @property
    def head_dim(self) -> int:
        return next(iter(self.layers.values())).k.shape[2]

    def frames(self) -> list[Segment]:
        return [s for s in self.segments if s.kind == FRAME]

    def segment_ids(self) -> torch.Tensor:
        """Segment index of every token, shape ``(T,)``."""
        return torch.repeat_interleave(torch.arange(len(self.segments)),
                                       torch.tensor([s.length for s in self.segments]))

    def describe(self) -> dict:
        kinds = {name: sum(s.length for s in self.segments if s.kind == k) for k, name in KIND_NAMES.items()}
        return {**self.meta, "tokens": self.tokens, "frames": len(self.frames()),
                "frame_tokens": kinds["frame"], "question_tokens": kinds["question"],
                "answer_tokens": kinds["answer"], "layers": self.layer_ids,
                "query_heads": self.query_heads, "kv_heads": self.kv_heads, "head_dim": self.head_dim}

    def check(self, cfg=None, *, source: str = "trace") -> None:
        """Shapes agree with each other (and with ``cfg.model`` when given); raise :class:`TraceError` if not."""
        _check(self, cfg, source)

    def select_layers(self, layers) -> "Trace":
        missing = [l for l in layers if l not in self.layers]
        if missing:
            raise TraceError(f"the trace has no layer {missing[0]} (it stores layers {self.layer_ids}); "
                             "choose --layers among those.")
        return Trace(self.segments, {l: self.layers[l] for l in layers}, dict(self.meta))


def segments_from_lengths(kinds_lengths) -> list[Segment]:
    out, pos = [], 0
    for kind, length in kinds_lengths:
        out.append(Segment(int(kind), pos, int(length)))
        pos += int(length)
    return out


def _check(trace: Trace, cfg, source: str) -> None:
    if not trace.segments:
        raise TraceError(f"{source}: segments is empty; a trace needs at least one segment.")
    for s in trace.segments:
        if s.kind not in KIND_NAMES or s.length < 1:
            raise TraceError(f"{source}: segments has a row (kind {s.kind}, length {s.length}); kinds are 0 frame, "
                             "1 question, 2 answer and lengths must be ≥ 1.")
    if not trace.layers:
        raise TraceError(f"{source}: no layer tensors (q.<l>, k.<l>, v.<l>) found.")
    t = trace.tokens
    ref = next(iter(trace.layers.values()))
    hq, hkv, d = ref.q.shape[1], ref.k.shape[1], ref.k.shape[2]
    for l, x in sorted(trace.layers.items()):
        want = {"q": (t, hq, d), "k": (t, hkv, d), "v": (t, hkv, d), "qpre": (t, hq, d), "kpre": (t, hkv, d)}
        for name, tensor in (("q", x.q), ("k", x.k), ("v", x.v), ("qpre", x.q_pre), ("kpre", x.k_pre)):
            if tensor is None:
                continue
            if tuple(tensor.shape) != want[name]:
                raise TraceError(f"{source}: tensor {name}.{l} has shape {tuple(tensor.shape)}, expected "
                                 f"{want[name]} (tokens from segments, heads and head_dim from q/k of layer "
                                 f"{min(trace.layers)}).")
            if not torch.isfinite(tensor).all():
                raise TraceError(f"{source}: tensor {name}.{l} (shape {tuple(tensor.shape)}) holds NaN or "
                                 "infinite values.")
    if hq % hkv:
        raise TraceError(f"{source}: q has {hq} heads, not a multiple of the {hkv} KV heads of k.")
    if cfg is not None:
        m = cfg.model
        for key, have, want in (("model.query_heads", hq, m.query_heads), ("model.kv_heads", hkv, m.kv_heads),
                                ("model.head_dim", d, m.head_dim)):
            if have != want:
                shape = tuple(ref.q.shape) if key == "model.query_heads" else tuple(ref.k.shape)
                name = "q" if key == "model.query_heads" else "k"
                raise TraceError(f"{source}: tensor {name}.{min(trace.layers)} has shape {shape} but the config "
                                 f"has {key} = {want}; use a config whose model section matches the trace.")
        bad = [l for l in trace.layers if l >= m.layers]
        if bad:
            raise TraceError(f"{source}: layer {bad[0]} is beyond model.layers = {m.layers} of the config.")


# ---- files ---------------------------------------------------------------------------------------------------


def _read_tensors(path: Path) -> dict:
    suffix = path.suffix.lower()
    if suffix not in TRACE_SUFFIXES:
        raise TraceError(f"{path}: unknown trace format {suffix!r}; use one of {', '.join(TRACE_SUFFIXES)}.")
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file; pass synthetic, video, or the path of a "
                         f"{'/'.join(TRACE_SUFFIXES)} file.")
    try:
        if suffix == ".pt":
            data = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(data, dict):
                raise TraceError(f"{path}: holds a {type(data).__name__}, expected a dict of tensors "
                                 "(q.<l>, k.<l>, v.<l>, segments).")
            return data
        if suffix == ".npz":
            import numpy as np

            with np.load(path, allow_pickle=False) as z:
                return {k: torch.from_numpy(z[k].copy()) for k in z.files}
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise TraceError("reading .safetensors traces needs the safetensors package; install it with: "
                             "pip install safetensors") from None
        return load_file(str(path))
    except TraceError:
        raise
    except Exception as e:   # every reader has its own exception types for a corrupt file
        raise TraceError(f"{path}: cannot be read as a {suffix} trace ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else 'corrupt file'}).") from None


def load_trace(path, cfg=None) -> Trace:
    """Read a trace file (naming convention in the module docstring) and check its shapes."""
    path = Path(path)
    data = _read_tensors(path)
    src = str(path)
    for name, value in data.items():
        if not isinstance(value, torch.Tensor):
            raise TraceError(f"{src}: entry {name!r} is a {type(value).__name__}, expected a tensor.")
    if "segments" not in data:
        raise TraceError(f"{src}: tensor segments is missing; it must be an integer (S, 2) tensor of "
                         "(kind, length) rows.")
    seg = data["segments"]
    if seg.dim() != 2 or seg.shape[1] != 2 or seg.is_floating_point() or seg.is_complex():
        raise TraceError(f"{src}: tensor segments has shape {tuple(seg.shape)} and dtype {seg.dtype}; expected an "
                         "integer (S, 2) tensor of (kind, length) rows.")
    segments = segments_from_lengths(seg.tolist())
    layers: dict[int, dict] = {}
    for name, tensor in data.items():
        if name == "segments":
            continue
        m = _NAME.match(name)
        if not m:
            raise TraceError(f"{src}: unexpected tensor {name} (shape {tuple(tensor.shape)}); names are q.<l>, "
                             "k.<l>, v.<l>, qpre.<l>, kpre.<l> and segments.")
        if tensor.dim() != 3 or not tensor.is_floating_point():
            raise TraceError(f"{src}: tensor {name} has shape {tuple(tensor.shape)} and dtype {tensor.dtype}; "
                             "expected a floating-point (tokens, heads, head_dim) tensor.")
        layers.setdefault(int(m.group(2)), {})[m.group(1)] = tensor.to(torch.float32)
    out = {}
    for l, parts in sorted(layers.items()):
        for need in ("q", "k", "v"):
            if need not in parts:
                raise TraceError(f"{src}: tensor {need}.{l} is missing (layer {l} has "
                                 f"{', '.join(sorted(parts))}); every stored layer needs q, k and v.")
        out[l] = LayerQKV(parts["q"], parts["k"], parts["v"], parts.get("qpre"), parts.get("kpre"))
    trace = Trace(segments, out, {"kind": "file", "path": str(path)})
    trace.check(cfg, source=src)
    return trace


def trace_tensors(trace: Trace, dtype=torch.float32) -> dict:
    out = {"segments": torch.tensor([[s.kind, s.length] for s in trace.segments], dtype=torch.int64)}
    for l, x in trace.layers.items():
        for name, t in (("q", x.q), ("k", x.k), ("v", x.v), ("qpre", x.q_pre), ("kpre", x.k_pre)):
            if t is not None:
                out[f"{name}.{l}"] = t.to(dtype).contiguous()
    return out


def save_trace(trace: Trace, path, dtype=torch.float32) -> Path:
    """Write a trace in the format given by the suffix (``.pt``, ``.npz`` or ``.safetensors``)."""
    path = Path(path)
    tensors = trace_tensors(trace, dtype)
    suffix = path.suffix.lower()
    if suffix == ".pt":
        torch.save(tensors, path)
    elif suffix == ".npz":
        import numpy as np

        np.savez(path, **{k: v.numpy() for k, v in tensors.items()})
    elif suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(tensors, str(path))
    else:
        raise TraceError(f"{path}: unknown trace format {suffix!r}; use one of {', '.join(TRACE_SUFFIXES)}.")
    return path
