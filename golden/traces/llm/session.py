"""The ``llm-video`` session: real video read by a trained LLM through its chat template, and its trace.

Layout of turn ``t`` (``--turns`` turns; frames split evenly over the turns as in :func:`.traces.session_layout`)::

    [user-turn opening]  [frames of turn t]  ["\\n" + question + assistant opening]  [answer]
     question segment     frame segments      question segment                       answer segment

The texts around the frames come from the model's own chat template, rendered once for a conversation
``user, assistant, user`` with the generation prompt and split at the messages: the first turn opens with the
template's prefix (SmolLM2: its default system prompt and ``<|im_start|>user\\n``), later turns with what closes
an assistant turn and opens a user turn. A model without a chat template gets ``"\\nAnswer:"`` after the question.
Text segments are *question* segments (prefilled in one step); the answer is ``model.answer_tokens`` tokens that
the model generates greedily on the full context so far (``transformers`` ``generate``, repetition penalty
``LLMSpec.repetition_penalty`` over the generated tokens, end of turn suppressed so every session has the same
number of answer positions), then teacher-forced (one decode step per token).

Frame tokens: the clips' EfficientNet-Lite0 features (:mod:`vrex.golden.traces.video`, cached), reduced to
``model.tokens_per_frame`` tokens, projected by :mod:`.projector`. ``--frames`` beyond what the clips give at
``--fps`` loops the playlist (the loop count is recorded).

The trace is the model's own post-RoPE Q/K/V of the whole session (:func:`vrex.golden.traces.capture.capture_trace`,
one teacher-forced forward pass), every layer, stored as float16 (values are rounded to float16 whether or not
the cache was hit, so cached and fresh runs agree). Cache: ``<build>/golden/traces/llm/traces/<key>/`` with
``trace.safetensors``, ``session.safetensors`` (input embeddings, token ids, segments) and ``meta.json``; the key
hashes the model file, clips (name and size) or video file, fps, frames, projector, question, seed, turns, tokens
per frame, answer tokens and repetition penalty. The folder is written under a temporary name and renamed when
complete.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from vrex.errors import TraceError

from vrex.golden.cache import golden_cache_dir
from vrex.golden.traces.capture import capture_trace
from vrex.golden.traces.trace import (ANSWER, FRAME, QUESTION, Segment, Trace, load_trace, save_trace, segments_from_lengths)
from vrex.golden.traces.video import VideoSpec, clip_features, reduce_tokens
from vrex.golden.traces.llm.model import LoadedModel, check_shapes, load_model, model_shape, package_version
from vrex.golden.traces.llm.projector import PROJECTORS, project

__all__ = ["DEFAULT_QUESTION", "LLMSpec", "LLMSession", "template_texts", "plan_session", "llm_video_trace",
           "load_session", "SESSION_VERSION", "frame_tokens"]

DEFAULT_QUESTION = "What happens in this video? Describe the scenes, the objects and the people you see."
SESSION_VERSION = 1            # bump when the layout or the stored format changes (part of the cache key)
_MARKS = ("\x01VREX-A\x01", "\x01VREX-B\x01", "\x01VREX-C\x01")


@dataclass(frozen=True)
class LLMSpec:
    model: str = "smollm2"               # --model: smollm2, a .gguf file or a HuggingFace folder
    projector: str = "semantic"          # --projector: semantic or random
    question: str = DEFAULT_QUESTION     # --question
    repetition_penalty: float = 1.2      # greedy answer generation

    def describe(self) -> dict:
        return asdict(self)


@dataclass
class LLMSession:
    """What the e2e loop needs to run the model again: inputs, token ids (-1 = visual), segments, provenance."""

    segments: list[Segment]
    embeds: torch.Tensor          # (T, hidden) float32 input embeddings
    token_ids: torch.Tensor       # (T,) int64, -1 for visual tokens
    meta: dict

    @property
    def tokens(self) -> int:
        return self.segments[-1].end

    def answer_positions(self) -> list[int]:
        return [t for s in self.segments if s.kind == ANSWER for t in range(s.start, s.end)]


def template_texts(tokenizer) -> tuple[str, str, str]:
    """``(first opening, assistant opening, later opening)`` from the tokenizer's chat template."""
    if not getattr(tokenizer, "chat_template", None):
        return "", "\nAnswer:", "\n"
    msgs = [{"role": "user", "content": _MARKS[0]}, {"role": "assistant", "content": _MARKS[1]},
            {"role": "user", "content": _MARKS[2]}]
    text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    try:
        p0, rest = text.split(_MARKS[0])
        p1, rest = rest.split(_MARKS[1])
        p2, p3 = rest.split(_MARKS[2])
    except ValueError:
        raise TraceError("the model's chat template does not render user and assistant messages in order; pass a "
                         "model with a standard chat template.") from None
    return p0, p3, p2


def _ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def plan_session(tokenizer, frames: int, tokens_per_frame: int, turns: int, question: str, answer: int,
                 context: int | None, label: str) -> list[tuple[int, int, list[int] | None]]:
    """Rows ``(kind, length, token ids or None)``; rejects a session beyond the model's context."""
    if frames < 1 or turns < 1 or turns > frames:
        raise TraceError(f"a session needs ≥ 1 frame and 1 ≤ turns ≤ frames (got {frames} frames, {turns} turns).")
    first, assistant, later = template_texts(tokenizer)
    q_ids = _ids(tokenizer, "\n" + question + assistant)
    rows, done = [], 0
    for t in range(turns):
        opening = _ids(tokenizer, first if t == 0 else later)
        if opening:
            rows.append((QUESTION, len(opening), opening))
        upto = round(frames * (t + 1) / turns)
        rows += [(FRAME, tokens_per_frame, None)] * (upto - done)
        done = upto
        rows += [(QUESTION, len(q_ids), q_ids), (ANSWER, answer, None)]
    total = sum(r[1] for r in rows)
    if context is not None and total > context:
        text = total - frames * tokens_per_frame
        if text >= context:
            raise TraceError(f"--question is {len(q_ids)} tokens: with the chat template and {turns} answer(s) of "
                             f"{answer} tokens the text alone needs {text} tokens, beyond {label}'s {context}-token "
                             "context; ask a shorter question or use fewer --turns.")
        most = (context - text) // tokens_per_frame
        raise TraceError(f"--frames {frames}: the session would have {total} tokens, beyond {label}'s {context}-token "
                         f"context; use at most {most} frames ({tokens_per_frame} tokens per frame).")
    return rows


def frame_tokens(video: VideoSpec, frames: int | None, tokens_per_frame: int, cache: bool):
    """The playlist's frames reduced to ``tokens_per_frame`` tokens ``(frames, n, 1280)`` (looped to ``frames``), and
    the clips' facts."""
    feats, facts = [], []
    cache_dir = golden_cache_dir("video") if cache else None
    for name, path in video.sources():
        f, fact = clip_features(name, path, video.fps, cache_dir)
        feats.append(f)
        facts.append(fact)
        if frames is not None and sum(len(x) for x in feats) >= frames:
            break
    allf = torch.cat(feats)
    n = len(allf) if frames is None else frames
    loops = math.ceil(n / len(allf))
    allf = allf.repeat(loops, 1, 1)[:n]
    return reduce_tokens(allf, tokens_per_frame), {"clips_used": facts, "playlist_frames": sum(len(x) for x in feats),
                                                    "loops": loops}


def _generate(model, embeds: torch.Tensor, n: int, penalty: float, tokenizer) -> list[int]:
    from transformers import GenerationConfig

    eos = tokenizer.eos_token_id
    gc = GenerationConfig(max_new_tokens=n, min_new_tokens=n, do_sample=False, repetition_penalty=penalty,
                          eos_token_id=eos, pad_token_id=eos if eos is not None else 0)
    with warnings.catch_warnings():
        # the penalty applies to the generated tokens only (visual tokens have no ids): intended
        warnings.filterwarnings("ignore", message="Passing `repetition_penalty`")
        out = model.generate(inputs_embeds=embeds[None], attention_mask=torch.ones(1, len(embeds), dtype=torch.long),
                             generation_config=gc)
    return out[0, -n:].tolist()


def _cache_key(cfg, opts, src) -> dict:
    v = opts.video
    v.sources()                      # a missing video file is reported here, in one sentence
    clips = ([{"file": Path(v.path).name, "size": Path(v.path).stat().st_size}] if v.path else
             [{"clip": name, "size": path.stat().st_size} for name, path in v.sources()])
    return {"version": SESSION_VERSION, "model_sha256": src.sha256, "clips": clips, "fps": v.fps,
            "frames": opts.frames, "projector": opts.llm.projector, "question": opts.llm.question, "seed": opts.seed,
            "turns": opts.turns, "tokens_per_frame": cfg.model.tokens_per_frame,
            "answer_tokens": cfg.model.answer_tokens if opts.answer_tokens is None else opts.answer_tokens,
            "repetition_penalty": opts.llm.repetition_penalty}


def _build(cfg, opts, lm: LoadedModel, src_label: str):
    m = cfg.model
    shape = model_shape(lm.model.config)
    answer = m.answer_tokens if opts.answer_tokens is None else opts.answer_tokens
    if opts.frames is not None:      # reject a session beyond the context before decoding any video
        plan_session(lm.tokenizer, opts.frames, m.tokens_per_frame, opts.turns, opts.llm.question, answer,
                     shape["context"], src_label)
    tokens, video_facts = frame_tokens(opts.video, opts.frames, m.tokens_per_frame, opts.cache)
    frames = len(tokens)
    rows = plan_session(lm.tokenizer, frames, m.tokens_per_frame, opts.turns, opts.llm.question, answer,
                        shape["context"], src_label)
    embed = lm.model.get_input_embeddings()
    with torch.no_grad():
        vis, proj_meta = project(opts.llm.projector, tokens, lm.tokenizer, embed, opts.seed)
        parts, ids, f, answers = [], [], 0, []
        for kind, length, row_ids in rows:
            if kind == FRAME:
                parts.append(vis[f].float())
                ids += [-1] * length
                f += 1
            elif kind == ANSWER:
                gen = _generate(lm.model, torch.cat(parts), length, opts.llm.repetition_penalty, lm.tokenizer)
                answers.append(gen)
                parts.append(embed(torch.tensor(gen)).float())
                ids += gen
            else:
                parts.append(embed(torch.tensor(row_ids)).float())
                ids += row_ids
        embeds = torch.cat(parts)
    segments = segments_from_lengths([(k, n) for k, n, _ in rows])
    trace = capture_trace(lm.model, [(k, n) for k, n, _ in rows], inputs_embeds=embeds[None])
    peak = max(float(t.abs().max()) for x in trace.layers.values() for t in (x.q, x.k, x.v))
    if peak >= 65504:
        raise TraceError(f"the model's Q/K/V reach {peak:.3g}, beyond float16; this model cannot be stored as an "
                         "llm-video trace.")
    meta = {"kind": "llm-video", "model": lm.describe(), "projector": proj_meta,
            "video": {**opts.video.describe(), **video_facts, "frames": frames},
            "question": opts.llm.question, "turns": opts.turns, "seed": opts.seed,
            "answers": [lm.tokenizer.decode(a) for a in answers],
            "generation": {"rule": "greedy", "tokens": answer, "repetition_penalty": opts.llm.repetition_penalty,
                           "end_of_turn": "suppressed"},
            "real": "video clips, EfficientNet-Lite0 features and classifier, LLM weights, tokenizer, chat template, "
                    "question text and the model's own answer",
            "not_real": "the projector is not trained (" + proj_meta["kind"] + "); ReSV hyperplanes are random "
                        "(seeded)",
            "qkv_dtype": "float16", "tools": {"transformers": package_version("transformers"),
                                              "torch": torch.__version__}}
    return trace, LLMSession(segments, embeds, torch.tensor(ids, dtype=torch.int64), meta)


def _half(trace: Trace) -> Trace:
    for x in trace.layers.values():
        x.q, x.k, x.v = (t.half().float() for t in (x.q, x.k, x.v))
    return trace


def _save(folder: Path, trace: Trace, session: LLMSession, key: dict) -> None:
    from safetensors.torch import save_file

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        save_trace(trace, tmp / "trace.safetensors", dtype=torch.float16)
        seg = torch.tensor([[s.kind, s.length] for s in session.segments], dtype=torch.int64)
        save_file({"embeds": session.embeds.contiguous(), "token_ids": session.token_ids, "segments": seg},
                  str(tmp / "session.safetensors"))
        (tmp / "meta.json").write_text(json.dumps({"key": key, "meta": session.meta}, indent=1))
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / "meta.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load(folder: Path, cfg, label: str):
    from safetensors.torch import load_file

    meta = json.loads((folder / "meta.json").read_text())["meta"]
    check_shapes(cfg, meta["model"]["shape"], label)
    trace = load_trace(folder / "trace.safetensors", cfg)
    trace.meta = {**meta, "cache": "hit"}
    s = load_file(str(folder / "session.safetensors"))
    session = LLMSession(segments_from_lengths(s["segments"].tolist()), s["embeds"], s["token_ids"], meta)
    return trace, session


def load_session(cfg, opts, *, need_model: bool = False):
    """``(trace, session, loaded model or None)`` for the llm-video source, from the cache when possible."""
    spec = opts.llm
    if spec.projector not in PROJECTORS:
        raise TraceError(f"--projector {spec.projector!r}: choose {' or '.join(PROJECTORS)}.")
    if not spec.question.strip():
        raise TraceError("--question is empty; ask a question about the video.")
    if opts.frames is not None and opts.frames < 1:
        raise TraceError("--frames must be ≥ 1.")
    from vrex.golden.traces.llm.model import resolve_model

    src = resolve_model(spec.model)
    key = _cache_key(cfg, opts, src)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    folder = golden_cache_dir("llm", "traces", f"{src.path.stem}-{digest}")
    lm = load_model(spec.model, cache=opts.cache) if need_model else None
    if lm is not None:
        check_shapes(cfg, model_shape(lm.model.config), src.label)
    if opts.cache and (folder / "meta.json").is_file():
        try:
            trace, session = _load(folder, cfg, src.label)
            return trace, session, lm
        except TraceError:
            raise
        except Exception:
            shutil.rmtree(folder, ignore_errors=True)          # damaged: build again
    if lm is None:
        lm = load_model(spec.model, cache=opts.cache)
        check_shapes(cfg, model_shape(lm.model.config), src.label)
    trace, session = _build(cfg, opts, lm, src.label)
    trace = _half(trace)
    if opts.cache:
        _save(folder, trace, session, key)
    trace.meta = {**session.meta, "cache": "built"}
    trace.check(cfg, source="llm-video trace")
    return trace, session, lm


def llm_video_trace(cfg, opts, layers=None) -> Trace:
    """The llm-video trace (every layer, or the given ones)."""
    trace, _, _ = load_session(cfg, opts)
    return trace if layers is None else trace.select_layers(layers)
