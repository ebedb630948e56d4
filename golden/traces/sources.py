"""One entry point for every trace source: ``synthetic``, ``video``, ``llm-video`` or a trace file.

``llm-video`` is the real-LLM source (:mod:`.llm.session`): real video read by a trained LLM (SmolLM2 by default)
through its chat template, with a real question and the model's own answer; its Q/K/V are the model's. The rest of
this docstring describes the two generated sources with the random-weight transformer.

A generated session is laid out as ``turns`` rounds of *frames, question, answer*: the frames are split evenly
over the turns and each round ends with a question of ``question_tokens`` and an answer of ``answer_tokens``
(defaults ``model.question_tokens`` / ``model.answer_tokens``, the COIN averages; one turn = the COIN protocol,
where the question follows the stream). Frame tokens come from :mod:`.synthetic` or :mod:`.video`, text tokens
are random ``N(0, I)`` embeddings, and :mod:`.transformer` turns the embeddings into per-layer Q/K/V.

For the video trace the 1280-d EfficientNet features are standardised per channel over the session (z-score;
without it every token shares the large positive mean of the ReLU6 features) and mapped to the transformer width
by a seeded random projection ``N(0, 1/1280)`` (the "projector"; random, like the transformer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from vrex.errors import TraceError

from vrex.golden.cache import golden_cache_dir
from vrex.golden.traces.llm.session import LLMSpec
from vrex.golden.threads import torch_threads
from vrex.golden.traces.synthetic import SyntheticSpec, synthetic_frame_embeddings
from vrex.golden.traces.trace import ANSWER, FRAME, QUESTION, TRACE_SUFFIXES, Trace, load_trace, segments_from_lengths
from vrex.golden.traces.transformer import TransformerSpec, run_transformer, seeded_generator
from vrex.golden.traces.video import VideoSpec, clip_features, reduce_tokens

__all__ = ["TraceOptions", "make_trace", "needed_layers", "session_layout", "default_frames"]


@dataclass(frozen=True)
class TraceOptions:
    frames: int | None = None          # None: synthetic → 2 recent windows of frames; video → every sampled frame
    turns: int = 1
    question_tokens: int | None = None
    answer_tokens: int | None = None
    seed: int = 0
    synthetic: SyntheticSpec = field(default_factory=SyntheticSpec)
    video: VideoSpec = field(default_factory=VideoSpec)
    transformer: TransformerSpec = field(default_factory=TransformerSpec)
    llm: LLMSpec = field(default_factory=LLMSpec)   # the llm-video source: model, projector, question
    cache: bool = True                 # cache video features (and llm-video traces) under <build>/golden


def default_frames(cfg) -> int:
    """Synthetic session length: twice the recent window, so half of the session runs with offloaded KV."""
    return math.ceil(2 * cfg.resv.recent_window_tokens / cfg.model.tokens_per_frame)


def needed_layers(cfg, layers) -> list[int]:
    """The layers a run needs: the requested ones, plus each one's predecessor when ReSV predicts from it."""
    out = set(layers)
    if cfg.resv.predict_from == "previous_layer":
        out |= {l - 1 for l in layers if l > 0}
    return sorted(out)


def session_layout(frames: int, tokens_per_frame: int, question: int, answer: int, turns: int):
    """``(kind, length)`` rows: ``turns`` rounds of frames + question + answer (frames split evenly)."""
    if frames < 1 or turns < 1 or turns > frames:
        raise TraceError(f"a session needs ≥ 1 frame and 1 ≤ turns ≤ frames (got {frames} frames, {turns} turns).")
    rows, done = [], 0
    for t in range(turns):
        upto = round(frames * (t + 1) / turns)
        rows += [(FRAME, tokens_per_frame)] * (upto - done)
        done = upto
        rows += [(k, n) for k, n in ((QUESTION, question), (ANSWER, answer)) if n > 0]
    return rows


def _embed_session(cfg, opts: TraceOptions, frame_emb: torch.Tensor, width: int):
    m = cfg.model
    q_tok = m.question_tokens if opts.question_tokens is None else opts.question_tokens
    a_tok = m.answer_tokens if opts.answer_tokens is None else opts.answer_tokens
    rows = session_layout(frame_emb.shape[0], m.tokens_per_frame, q_tok, a_tok, opts.turns)
    gen = seeded_generator("text", opts.seed)
    parts, f = [], 0
    for kind, length in rows:
        if kind == FRAME:
            parts.append(frame_emb[f])
            f += 1
        else:
            parts.append(torch.randn(length, width, generator=gen))
    return segments_from_lengths(rows), torch.cat(parts)


def _video_frame_embeddings(cfg, opts: TraceOptions, frames: int | None, width: int):
    feats, facts = [], []
    cache = golden_cache_dir("video") if opts.cache else None
    for name, path in opts.video.sources():
        f, fact = clip_features(name, path, opts.video.fps, cache)
        feats.append(f)
        facts.append(fact)
        if frames is not None and sum(len(x) for x in feats) >= frames:
            break
    allf = torch.cat(feats)
    if frames is not None:
        if frames > len(allf):
            raise TraceError(f"--frames {frames}: the video gives only {len(allf)} frames at {opts.video.fps:g} fps; "
                             "ask for fewer frames, a higher fps, or more clips.")
        allf = allf[:frames]
    tokens = reduce_tokens(allf, cfg.model.tokens_per_frame)            # (F, n, 1280)
    flat = tokens.reshape(-1, tokens.shape[-1])
    z = (flat - flat.mean(0)) / (flat.std(0) + 1e-5)
    proj = torch.randn(width, z.shape[1], generator=seeded_generator("projector", opts.seed)) * z.shape[1] ** -0.5
    emb = (z @ proj.T).reshape(tokens.shape[0], tokens.shape[1], width)
    return emb, facts


def make_trace(cfg, source: str, *, layers=None, options: TraceOptions = TraceOptions()) -> Trace:
    """A checked :class:`Trace` for ``source`` = ``"synthetic"``, ``"video"``, ``"llm-video"`` or a trace file path.

    ``layers`` (default: every layer of the config) are the decoder layers to keep; generated traces compute
    the layers up to the highest one requested, file traces must contain them.
    """
    with torch_threads():
        return _make_trace(cfg, source, layers, options)


def _make_trace(cfg, source, requested, options) -> Trace:
    layers = list(range(cfg.model.layers)) if requested is None else sorted(set(requested))
    need = needed_layers(cfg, layers)
    pre = cfg.resv.hashed_key == "pre_rope"
    if source == "llm-video":
        if pre:
            raise TraceError("the llm-video trace records post-RoPE keys; set resv.hashed_key: post_rope.")
        from vrex.golden.traces.llm.session import llm_video_trace

        return llm_video_trace(cfg, options, need if requested is not None else None)
    if source not in ("synthetic", "video"):
        path = Path(source)
        if path.suffix.lower() not in TRACE_SUFFIXES and not path.exists():
            raise TraceError(f"--trace {source!r} is neither synthetic, video, llm-video, nor an existing "
                             f"{'/'.join(TRACE_SUFFIXES)} trace file.")
        trace = load_trace(path, cfg)
        if requested is not None:
            trace = trace.select_layers(need)
        elif cfg.resv.predict_from == "previous_layer":
            trace.select_layers(needed_layers(cfg, trace.layer_ids))          # fails clearly if one is missing
        if options.frames is not None:
            raise TraceError("--frames applies to generated traces only; cut a file trace before saving it.")
        if pre and any(trace.layers[l].k_pre is None or trace.layers[l].q_pre is None for l in need):
            raise TraceError(f"{path}: resv.hashed_key = pre_rope needs pre-RoPE tensors qpre.<l> and kpre.<l> "
                             "for every layer.")
        return trace
    spec = options.transformer
    width = spec.resolved_width(cfg)
    if source == "synthetic":
        frames = options.frames or default_frames(cfg)
        frame_emb = synthetic_frame_embeddings(options.synthetic, frames, cfg.model.tokens_per_frame, width,
                                               options.seed)
        meta = {"kind": "synthetic", "synthetic": options.synthetic.describe(cfg.model.tokens_per_frame)}
    else:
        frame_emb, facts = _video_frame_embeddings(cfg, options, options.frames, width)
        meta = {"kind": "video", "video": {**options.video.describe(), "clips_used": facts},
                "weights": "EfficientNet-Lite0 real (ImageNet); projector, transformer, hyperplanes and text "
                           "embeddings random (seeded)"}
    segments, emb = _embed_session(cfg, options, frame_emb, width)
    qkv = run_transformer(cfg, emb, need, spec, keep_pre_rope=pre)
    meta.update({"seed": options.seed, "turns": options.turns, "transformer": spec.describe(cfg)})
    trace = Trace(segments, qkv, meta)
    trace.check(cfg, source=f"{source} trace")
    return trace
