"""The needle benchmark's context: the chat template around the haystack's frames, the needles inserted at their
depths, and per needle the question and its options.

Token layout (LongVA's V-NIAH, one extra frame per needle)::

    [user-turn opening] [frames[:d1]] [needle 1] [frames[d1:d2]] [needle 2] … [frames[dK:]]    ← shared prefill
    ["\\n" + question + assistant opening + "Answer:"] [option tokens]                          ← a branch per option

A needle at depth d is inserted after ``round(d × N)`` of the N haystack frames; depth 1 puts it after the last
frame, inside the resident window (the control row). The haystack's length is the tokens before the question.
The reference context for calibration is the same haystack without the needles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from vrex.errors import TraceError, UsageError

from vrex.golden.traces.llm.projector import project
from vrex.golden.traces.llm.session import frame_tokens, template_texts
from vrex.golden.traces.trace import FRAME, QUESTION
from vrex.golden.evaluation.niah.needles import NEEDLES, check_options, needle_image

__all__ = ["Branch", "Context", "Haystack", "build_haystack", "place_needles", "build_context"]


@dataclass(frozen=True)
class Branch:
    """One needle's question and options, as token ids, with the options listed in one of their cyclic orders."""
    needle: str
    question_ids: tuple[int, ...]
    options: tuple[str, ...]
    option_ids: tuple[tuple[int, ...], ...]
    truth: int                                    # index of the true option
    order: int = 0                                # the cyclic rotation of the option list (Needle.options)

    @property
    def key(self) -> str:
        """The branch's name in a cell's results: ``needle#order``."""
        return f"{self.needle}#{self.order}"


@dataclass
class Context:
    """The shared prefill (embeddings and segments) and the branches asked after it."""
    embeds: torch.Tensor                          # (P, hidden) float32
    segments: list[tuple[int, int]]               # (kind, length) of the prefill
    needle_tokens: dict[str, range] = field(default_factory=dict)
    depths: dict[str, float] = field(default_factory=dict)
    branches: list[Branch] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return len(self.embeds)


@dataclass
class Haystack:
    """The haystack's projected frames and the needles' projected frames, for one model and length."""
    frames: torch.Tensor                          # (N, tokens_per_frame, hidden)
    needles: dict[str, torch.Tensor]              # name → (tokens_per_frame, hidden)
    opening: torch.Tensor                         # (O, hidden): the chat template's user-turn opening
    tail_texts: tuple[str, str]                   # (assistant opening, answer cue)
    facts: dict


def _ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def build_haystack(cfg, lm, video, length: int, needles: list[str], *, context: int | None,
                   projector: str = "semantic", seed: int = 0, cache: bool = True) -> Haystack:
    """Frames for a context of about ``length`` tokens before the question (needles included), projected as the
    llm-video session projects its frames."""
    from vrex.golden.traces.video import encode_frames, reduce_tokens

    tpf = cfg.model.tokens_per_frame
    first, assistant, _ = template_texts(lm.tokenizer)
    opening = _ids(lm.tokenizer, first)
    n = (length - len(opening)) // tpf - len(needles)
    if n < 1:
        raise UsageError(f"--lengths {length}: a haystack of {length} tokens holds no frame beside the chat opening "
                         f"({len(opening)} tokens) and {len(needles)} needle frame(s) of {tpf} tokens; use a length of "
                         f"at least {len(opening) + (len(needles) + 1) * tpf}.")
    longest_text = 64 + max(len(_ids(lm.tokenizer, NEEDLES[x].question(k))) for x in needles
                                for k in range(len(NEEDLES[x].options())))
    total = len(opening) + (n + len(needles)) * tpf + longest_text
    if context is not None and total > context:
        raise UsageError(f"--lengths {length}: the context would hold {total} tokens with the question, beyond the "
                         f"model's {context}-token context; use a length below {context - longest_text}.")
    tokens, facts = frame_tokens(video, n, tpf, cache)
    embed = lm.model.get_input_embeddings()
    images = torch.stack([needle_image(x) for x in needles])
    needle_toks = reduce_tokens(encode_frames(images), tpf)
    with torch.no_grad():
        vis, meta = project(projector, torch.cat([tokens, needle_toks]), lm.tokenizer, embed, seed)
        op = embed(torch.tensor(opening, dtype=torch.long)).float() if opening else torch.zeros(0, embed.weight.shape[1])
    return Haystack(vis[:n].float(), {x: vis[n + i].float() for i, x in enumerate(needles)}, op,
                    (assistant, "Answer:"), {**facts, "frames": n, "projector": meta})


def place_needles(needles: list[str], depths: list[float], rotation: int) -> dict[str, float]:
    """Needle → depth: needle i at ``depths[(i + rotation) % len(depths)]`` (a Latin rotation: over
    ``len(depths)`` rotations every needle visits every depth once)."""
    for d in depths:
        if not 0.0 <= d <= 1.0:
            raise UsageError(f"--depths {d:g}: a depth is a fraction of the haystack in [0, 1].")
    return {x: depths[(i + rotation) % len(depths)] for i, x in enumerate(needles)}


def build_context(lm, hay: Haystack, depths: dict[str, float] | None, orders: int = 1) -> Context:
    """The prefill with the needles at ``depths`` (None: the reference context, no needle) and the branches: per
    needle one question per option order ``0 … orders - 1`` (the score is averaged over them: :mod:`.grid`)."""
    tok = lm.tokenizer
    n = len(hay.frames)
    tpf = hay.frames.shape[1]
    at = {} if depths is None else {x: round(d * n) for x, d in depths.items()}
    parts, segs, pos, needle_tokens = [], [], 0, {}
    if len(hay.opening):
        parts.append(hay.opening)
        segs.append((QUESTION, len(hay.opening)))
        pos += len(hay.opening)
    order = sorted(at, key=lambda x: (at[x], list(at).index(x)))
    k = 0
    for f in range(n + 1):
        while k < len(order) and at[order[k]] == f:
            parts.append(hay.needles[order[k]])
            segs.append((FRAME, tpf))
            needle_tokens[order[k]] = range(pos, pos + tpf)
            pos += tpf
            k += 1
        if f < n:
            parts.append(hay.frames[f])
            segs.append((FRAME, tpf))
            pos += tpf
    assistant, cue = hay.tail_texts
    branches = []
    for x in hay.needles:
        nd = NEEDLES[x]
        check_options(nd)
        for k in range(orders):
            q = _ids(tok, "\n" + nd.question(k) + assistant + cue)
            opts = tuple(nd.options(k))
            ids = tuple(tuple(_ids(tok, " " + o)) for o in opts)
            if any(not i for i in ids):
                raise TraceError(f"needle {x}: an option tokenises to nothing.")
            branches.append(Branch(x, tuple(q), opts, ids, opts.index(nd.truth), k))
    return Context(torch.cat(parts), segs, needle_tokens, dict(depths or {}), branches)
