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
    """One question and its options, as token ids, with the options listed in one of their cyclic orders.

    ``kind``: what / when / first (:data:`.needles.KINDS`); ``subjects``: the needle(s) it asks about (two for
    *first*). ``counted``: every subject at a retrieval depth (a question about a needle in the sinks' neighbourhood
    or in the resident window is a control, reported apart)."""
    needle: str
    question_ids: tuple[int, ...]
    options: tuple[str, ...]
    option_ids: tuple[tuple[int, ...], ...]
    truth: int                                    # index of the true option
    order: int = 0                                # the cyclic rotation of the option list
    kind: str = "what"
    subjects: tuple[str, ...] = ()
    counted: bool = True

    @property
    def key(self) -> str:
        """The branch's name in a cell's results: ``needle#order`` (what), ``kind:subjects#order`` otherwise."""
        if self.kind == "what":
            return f"{self.needle}#{self.order}"
        return f"{self.kind}:{'+'.join(self.subjects or (self.needle,))}#{self.order}"

    @property
    def question(self) -> str:
        """The question's name without its option order: the unit a score is averaged over."""
        return self.key.rsplit("#", 1)[0]


@dataclass
class Context:
    """The shared prefill (embeddings and segments) and the branches asked after it."""
    embeds: torch.Tensor                          # (P, hidden) float32
    segments: list[tuple[int, int]]               # (kind, length) of the prefill
    needle_tokens: dict[str, range] = field(default_factory=dict)
    depths: dict[str, float | str] = field(default_factory=dict)     # needle → its slot (a depth or a control)
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

    def variant(self, v: int) -> "Haystack":
        """Haystack variant ``v`` of the same frames: variant 0 is this haystack; variant ``v ≥ 1`` starts the
        video ``offset(v)`` frames later and wraps around (:func:`variant_offset`), so the needles of the same slots
        sit among other frames. The needles, the opening and the texts are shared."""
        if v == 0:
            return self
        k = variant_offset(v, len(self.frames))
        return Haystack(torch.roll(self.frames, -k, dims=0), self.needles, self.opening, self.tail_texts,
                        {**self.facts, "variant": v, "frame_offset": k})


def variant_offset(v: int, frames: int) -> int:
    """The frame offset of haystack variant ``v`` among ``frames`` frames: ``round(v · 0.382 · frames) mod frames``
    (the golden-section step, so the first variants spread over the video rather than repeat a third of it).
    Raises :class:`UsageError` when two variants up to ``v`` coincide (a haystack too short for that many)."""
    offsets = [round(u * 0.382 * frames) % frames for u in range(v + 1)]
    if len(set(offsets)) != len(offsets):
        raise UsageError(f"haystack variant {v} of a {frames}-frame haystack repeats an earlier one (offsets "
                         f"{offsets}); ask fewer rotations or a longer haystack.")
    return offsets[v]


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


CONTROLS = ("start", "window")      # the control slots: right after the chat opening, inside the resident window


def place_needles(needles: list[str], depths: list, rotation: int) -> dict[str, float | str]:
    """Needle → slot: needle i at ``depths[(i + rotation) % len(depths)]`` (a Latin rotation: over ``len(depths)``
    rotations every needle visits every slot once). A slot is a depth in [0, 1] over the offloaded span (0 its first
    frame after the opening, 1 its last before the resident window) or a control of :data:`CONTROLS`."""
    for d in depths:
        if d not in CONTROLS and not (isinstance(d, (int, float)) and 0.0 <= d <= 1.0):
            raise UsageError(f"--depths {d}: a depth is a fraction of the offloaded haystack in [0, 1], or a control "
                             f"({', '.join(CONTROLS)}).")
    return {x: depths[(i + rotation) % len(depths)] for i, x in enumerate(needles)}


def frame_slots(frames: int, slots: dict[str, float | str], tpf: int, window_tokens: int) -> dict[str, int]:
    """Needle → frame index among ``frames`` frame positions (haystack and needles together). Depth d maps to
    ``1 + round(d × (last − 1))`` where ``last`` is the last frame that is offloaded at the question (the resident
    window holds the ``window_tokens`` before it, and one frame of margin); ``start`` is frame 0, ``window`` the last
    frame. Needles that want the same frame take the next free ones, in the order given."""
    last = frames - 2 - -(-window_tokens // tpf)
    if last < 2 and any(s not in CONTROLS for s in slots.values()):
        raise UsageError(f"a haystack of {frames} frames leaves no frame offloaded beside a {window_tokens}-token "
                         "resident window; use a longer --lengths.")
    want = {x: 0 if s == "start" else frames - 1 if s == "window" else 1 + round(float(s) * (last - 1))
            for x, s in slots.items()}
    taken, out = set(), {}
    for x in sorted(want, key=lambda x: (want[x], list(want).index(x))):
        f = want[x]
        step = -1 if slots[x] == "window" else 1
        while f in taken:
            f += step
        taken.add(f)
        out[x] = f
    return out


def _third(fraction: float) -> int:
    return min(2, int(3 * fraction))


def build_context(lm, hay: Haystack, depths: dict[str, float | str] | None, orders: int | None = 1,
                  kinds: tuple[str, ...] = ("what",), window_tokens: int = 0, order_offset: int = 0) -> Context:
    """The prefill with the needles at their slots (None: the reference context, no needle) and the branches: per
    question one branch per option order ``order_offset … order_offset + orders - 1`` (modulo the option count;
    ``orders`` None: every order; the score is averaged over the orders asked: :mod:`.grid`). The grid asks one
    order per haystack with the rotation as the offset, so over the rotations each question meets the orders in turn
    (a Latin square of option positions), and the reference asks every order.

    Kinds: *what* per needle; *when* per needle (truth: the third of the video its frame sits in); *first* per pair
    of consecutive needles (truth: the one whose frame comes first). The reference context asks the same branches
    (their truth is not used)."""
    from vrex.golden.evaluation.niah.needles import FIRST_QUESTION, WHEN_OPTIONS, WHEN_QUESTION

    tok = lm.tokenizer
    n = len(hay.frames)
    tpf = hay.frames.shape[1]
    names = list(hay.needles)
    total = n + len(names)
    at = {} if depths is None else frame_slots(total, depths, tpf, window_tokens)
    parts, segs, pos, needle_tokens = [], [], 0, {}
    if len(hay.opening):
        parts.append(hay.opening)
        segs.append((QUESTION, len(hay.opening)))
        pos += len(hay.opening)
    by_frame = {f: x for x, f in at.items()}
    k = 0
    for f in range(total if at else n):
        if f in by_frame:
            parts.append(hay.needles[by_frame[f]])
            needle_tokens[by_frame[f]] = range(pos, pos + tpf)
        else:
            parts.append(hay.frames[k])
            k += 1
        segs.append((FRAME, tpf))
        pos += tpf
    assistant, cue = hay.tail_texts
    where = {x: (at[x] / max(1, total - 1)) if x in at else 0.0 for x in names}
    counted = {x: depths is None or depths.get(x) not in CONTROLS for x in names}
    branches = []

    def ask(kind, subjects, text, opts, truth):
        for j in range(len(opts) if orders is None else min(orders, len(opts))):
            k = (order_offset + j) % len(opts)
            rot = opts[k:] + opts[:k]
            q = _ids(tok, "\n" + text.format(options=", ".join(rot)) + assistant + cue)
            ids = tuple(tuple(_ids(tok, " " + o)) for o in rot)
            if any(not i for i in ids):
                raise TraceError(f"question {kind} {'+'.join(subjects)}: an option tokenises to nothing.")
            branches.append(Branch(subjects[0], tuple(q), tuple(rot), ids, rot.index(truth), k, kind,
                                   tuple(subjects), all(counted[s] for s in subjects)))

    from vrex.golden.evaluation.niah.needles import QUESTION as WHAT

    for x in names:
        nd = NEEDLES[x]
        check_options(nd)
        if "what" in kinds:
            opts = nd.options(0)
            ask("what", (x,), WHAT, opts, nd.truth)
        if "when" in kinds:
            ask("when", (x,), WHEN_QUESTION.replace("{object}", nd.truth), list(WHEN_OPTIONS),
                WHEN_OPTIONS[_third(where[x])])
    if "first" in kinds:
        for a, b in zip(names[0::2], names[1::2]):
            ta, tb = NEEDLES[a].truth, NEEDLES[b].truth
            text = FIRST_QUESTION.replace("{a}", ta).replace("{b}", tb)
            ask("first", (a, b), text, [ta, tb], ta if where[a] <= where[b] else tb)
    return Context(torch.cat(parts), segs, needle_tokens, dict(depths or {}), branches)
