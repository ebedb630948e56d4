"""The needle benchmark (vrex niah) on a tiny random Llama: needle slots over the offloaded span and the controls,
question kinds and their truths, full attention in the loop equal to the unmodified model, branching equal to running
the whole context, a batch of haystacks equal to running each alone, a method that fetches nothing losing the needle
and one that fetches everything matching full attention, the needle oracle fetching exactly the needle; the
aggregation's intervals and paired tests; bad input."""

import pytest
import torch

import llm_fixtures
from vrex.cli import main
from vrex.errors import TraceError, UsageError
from vrex.golden.evaluation.niah import run as niah_run
from vrex.golden.evaluation.niah.haystack import Haystack, build_context, place_needles
from vrex.golden.evaluation.niah.needles import Needle, check_options, needle_image, needle_names
from vrex.golden.evaluation.niah.run import run_cell
from vrex.golden.resv.policies import BaselineSettings, RetrievalPolicy
from vrex.golden.resv.stream import Stream, session_steps
from vrex.golden.traces.llm.model import load_model
from vrex.golden.traces.llm.session import template_texts
from vrex.golden.traces.trace import ANSWER, QUESTION, Trace, segments_from_lengths

pytest.importorskip("transformers")
FRAMES, TPF = 40, 8
WINDOW = 200      # the byte-level question is ~140 tokens: a needle in the window slot stays resident through it
# 43 frame positions (40 + 3 needles), 25 of them in the window: the offloaded span is frames 1 … 16
NEEDLES = ["coffee", "rocket", "chelsea"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = llm_fixtures.save_tiny_llm(tmp_path_factory.mktemp("tiny-llm-niah"), context=1024)
    return llm_fixtures.tiny_cfg(**{"resv.recent_window_tokens": WINDOW}), load_model(str(folder), cache=False)


def _haystack(lm, seed=0) -> Haystack:
    g = torch.Generator().manual_seed(seed)
    hidden = lm.model.config.hidden_size
    first, assistant, _ = template_texts(lm.tokenizer)
    ids = lm.tokenizer(first, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        opening = lm.model.get_input_embeddings()(torch.tensor(ids)).float()
    return Haystack(torch.randn(FRAMES, TPF, hidden, generator=g),
                    {x: 3 * torch.randn(TPF, hidden, generator=g) for x in NEEDLES}, opening,
                    (assistant, "Answer:"), {"frames": FRAMES})


def _context(lm, depths=(0.0, 0.5, "window"), **kw):
    hay = _haystack(lm)
    return hay, build_context(lm, hay, dict(zip(NEEDLES, depths)), window_tokens=WINDOW, **kw)


def _offloaded_at_the_question(cfg, ctx, needle) -> bool:
    b = ctx.branches[0]
    segs = segments_from_lengths(list(ctx.segments) + [(QUESTION, len(b.question_ids))])
    stream = Stream(cfg, Trace(segs, {}, {}))
    res = stream.residency(stream.steps[-1])
    r = ctx.needle_tokens[needle]
    return r[-1] < res.window_start and r[0] >= res.sinks


def test_each_needle_is_one_extra_frame_at_its_slot_and_depths_span_the_offloaded_frames(tiny):
    cfg, lm = tiny
    hay, ctx = _context(lm)
    opening = len(hay.opening)
    assert ctx.tokens == opening + (FRAMES + len(NEEDLES)) * TPF
    # depth d → frame 1 + round(d × 15): 0 → 1, 0.5 → 9; the window control is the last frame
    expected = {"coffee": opening + TPF, "rocket": opening + 9 * TPF, "chelsea": ctx.tokens - TPF}
    for x, start in expected.items():
        assert ctx.needle_tokens[x] == range(start, start + TPF)
        assert torch.equal(ctx.embeds[start:start + TPF], hay.needles[x])
    # the haystack's frames, in order, fill every other frame slot
    rest = [i for i in range(opening, ctx.tokens) if not any(i in r for r in ctx.needle_tokens.values())]
    assert torch.equal(ctx.embeds[rest], hay.frames.reshape(-1, hay.frames.shape[-1]))
    # at the question the window control is resident, depths 0 and 0.5 offloaded
    assert not _offloaded_at_the_question(cfg, ctx, "chelsea")
    assert _offloaded_at_the_question(cfg, ctx, "coffee") and _offloaded_at_the_question(cfg, ctx, "rocket")
    # depth 1 is the last offloaded frame (frame 16), the start control the first frame after the opening
    _, edge = _context(lm, ("start", 1.0, 0.0))
    assert edge.needle_tokens["coffee"].start == opening and edge.needle_tokens["rocket"].start == opening + 16 * TPF
    assert _offloaded_at_the_question(cfg, edge, "rocket")
    # two needles that want one frame take the next free one
    _, same = _context(lm, (0.5, 0.5, 0.5))
    assert [same.needle_tokens[x].start for x in NEEDLES] == [opening + f * TPF for f in (9, 10, 11)]
    ref = build_context(lm, hay, None)
    assert ref.tokens == opening + FRAMES * TPF and not ref.needle_tokens


def test_option_orders_put_every_option_at_every_position_once_and_share_the_truth(tiny):
    from vrex.golden.evaluation.niah.needles import NEEDLES as ALL

    nd = ALL["coffee"]
    orders = [nd.options(k) for k in range(5)]
    assert all(sorted(o) == sorted(orders[0]) for o in orders)
    assert all(len({o[i] for o in orders}) == 5 for i in range(5))          # a Latin square of positions
    _, lm = tiny
    hay = _haystack(lm)
    ctx = build_context(lm, hay, dict(zip(NEEDLES, (0.0, 0.5, 1.0))), orders=3)
    assert len(ctx.branches) == 3 * len(NEEDLES)
    mine = [b for b in ctx.branches if b.needle == "coffee"]
    assert [b.key for b in mine] == ["coffee#0", "coffee#1", "coffee#2"]
    assert len({b.question_ids for b in mine}) == 3 and {b.options[b.truth] for b in mine} == {"coffee"}


def test_the_score_is_averaged_over_the_orders_against_each_orders_reference():
    from vrex.golden.evaluation.niah.grid import GridSpec, aggregate

    def branch(order, lls, hits):
        return {"needle_name": "coffee", "order": order, "truth": "coffee", "log_likelihood": lls, "depth": 0.5,
                "exact_match": order == 0, "needle": {"selections": 10, "hits": hits}}
    ref = {"coffee#0": {"log_likelihood": {"coffee": -5.0, "tea": -5.0}},
           "coffee#1": {"log_likelihood": {"coffee": -4.0, "tea": -6.0}}}
    # order 0 alone prefers tea (-3.5 + 5 > -4 + 5); the mean over both orders prefers coffee
    cell = {"method": "resv", "rotation": 0, "frame_ratio": 0.5, "text_ratio": 0.25,
            "branches": {"coffee#0": branch(0, {"coffee": -4.0, "tea": -3.5}, 4),
                         "coffee#1": branch(1, {"coffee": -1.0, "tea": -6.0}, 6)}}
    grid = {"cells": {"1024/ref/reference": {"branches": ref, "method": "full", "rotation": None},
                      "1024/0/resv": cell}}
    agg = aggregate(GridSpec(needles=("coffee",), methods=("resv",)), grid)
    q, = agg["questions"]
    assert q["correct"] and q["scores"] == {"coffee": 2.0, "tea": 0.75} and q["orders"] == 2
    assert q["exact_match"] == 0.5 and q["hit_rate"] == 0.5


def test_row_mass_methods_carry_their_p():
    from vrex.golden.evaluation.offline import check_methods, variant_overrides

    assert variant_overrides("resv_row@0.8")["resv.text_row_mass_p"] == 0.8
    both = variant_overrides("resv_row@0.7:0.9")
    assert (both["resv.row_mass_p"], both["resv.text_row_mass_p"]) == (0.7, 0.9)
    assert variant_overrides("rekv") is None
    for bad in ("resv_row@", "resv_row@x", "resv_row@0:0.5", "resv_row@0.1:0.2:0.3"):
        with pytest.raises(UsageError, match="p values in"):
            check_methods([bad])
    with pytest.raises(UsageError, match="unknown method"):
        check_methods(["resv_exact@0.9"])


def test_a_per_stage_point_sweeps_the_frame_p_at_its_text_p():
    from vrex.golden.evaluation.niah.grid import family

    assert [family(m) for m in ("rekv@0.3", "resv_row@0.7", "resv_row@0.9:0.9", "resv_row@0.9:0.90",
                                "resv_row@0.7:0.99", "resv_row@0.5:0.99", "resv")] == \
        ["rekv", "resv_row", "resv_row", "resv_row", "resv_row@*:0.99", "resv_row@*:0.99", "resv"]


def test_every_variant_loads_on_every_builtin_config_and_resv_offloaded_is_the_old_rule():
    from vrex.config import builtin_config_names, load_config
    from vrex.golden.evaluation.offline import VARIANTS, variant_overrides

    for name in builtin_config_names():
        cfg = load_config(name)
        for method in VARIANTS:
            got = cfg.with_overrides(variant_overrides(method), source=method)     # no ConfigError on any pair
            if method in ("resv_offloaded", "resv_linear", "resv_topk", "resv_all"):
                assert got.resv.threshold_mass == "offloaded", (name, method)
    old = load_config("smollm2").with_overrides(variant_overrides("resv_offloaded"))
    assert (old.stage_ratio("frame"), old.stage_ratio("text")) == (0.6, 0.2)
    assert load_config("smollm2").stage_ratio("frame") == 0.9                    # the row rule's p, shipped


def test_question_kinds_ask_what_when_and_first_with_the_truth_of_the_frames(tiny):
    from vrex.golden.evaluation.niah.needles import KINDS, NEEDLES as ALL, WHEN_OPTIONS

    _, lm = tiny
    hay, ctx = _context(lm, (0.0, 1.0, "window"), kinds=("what", "when", "first"))
    by = {b.key: b for b in ctx.branches}
    assert set(by) == {"coffee#0", "rocket#0", "chelsea#0", "when:coffee#0", "when:rocket#0", "when:chelsea#0",
                       "first:coffee+rocket#0"}
    for b in ctx.branches:
        assert len(b.options) == round(1 / KINDS[b.kind]) and b.options[b.truth]     # chance = 1 / options
    total = FRAMES + len(NEEDLES)
    for x, frame in (("coffee", 1), ("rocket", 16), ("chelsea", total - 1)):
        truth = by[f"when:{x}#0"].options[by[f"when:{x}#0"].truth]
        assert truth == WHEN_OPTIONS[min(2, int(3 * frame / (total - 1)))]
    assert by["when:coffee#0"].options[by["when:coffee#0"].truth] == "beginning"
    assert by["when:chelsea#0"].options[by["when:chelsea#0"].truth] == "end"
    first = by["first:coffee+rocket#0"]
    assert first.options[first.truth] == ALL["coffee"].truth and first.subjects == ("coffee", "rocket")
    # a control (the window needle) makes its questions controls; the truth follows the frames when they swap
    assert not by["chelsea#0"].counted and not by["when:chelsea#0"].counted and by["first:coffee+rocket#0"].counted
    _, flipped = _context(lm, (0.9, 0.1, 0.5), kinds=("first",))
    b, = flipped.branches
    assert b.options[b.truth] == ALL["rocket"].truth
    # every option order of a question has as many tokens (a batch runs its haystacks' questions in lockstep)
    _, other = _context(lm, (0.9, 0.1, 0.5), kinds=("what", "when", "first"), order_offset=1)
    assert [len(b.question_ids) for b in other.branches] == [len(b.question_ids) for b in ctx.branches]


def test_haystack_variants_start_the_same_frames_elsewhere():
    from vrex.golden.evaluation.niah.haystack import Haystack, variant_offset

    frames = torch.arange(10.0).reshape(10, 1, 1).expand(10, 2, 3).clone()
    hay = Haystack(frames, {"coffee": torch.ones(2, 3)}, torch.zeros(1, 3), ("a", "b"), {"frames": 10})
    assert hay.variant(0) is hay
    v1, v2 = hay.variant(1), hay.variant(2)
    assert [variant_offset(v, 10) for v in range(4)] == [0, 4, 8, 1]
    assert v1.frames[:, 0, 0].tolist() == [4, 5, 6, 7, 8, 9, 0, 1, 2, 3] and v2.frames[0, 0, 0] == 8
    assert v1.needles is hay.needles and v1.facts == {"frames": 10, "variant": 1, "frame_offset": 4}
    assert hay.frames[0, 0, 0] == 0                                     # the base haystack is untouched
    with pytest.raises(UsageError, match="haystack variant 2 of a 2-frame haystack repeats an earlier one"):
        variant_offset(2, 2)


def test_batches_stay_within_a_variant_so_fewer_rotations_reuse_theirs():
    from vrex.golden.evaluation.niah.grid import GridSpec, _jobs, _rotation_batches, reference_name, variant_of

    assert _rotation_batches(GridSpec(rotations=7, batch=5)) == [[0, 1, 2, 3, 4], [5, 6]]
    assert _rotation_batches(GridSpec(rotations=9, batch=5)) == [[0, 1, 2, 3, 4], [5, 6], [7, 8]]
    assert _rotation_batches(GridSpec(rotations=16, batch=0)) == [list(range(7)), list(range(7, 14)), [14, 15]]
    spec = GridSpec(rotations=9, lengths=(1024,), methods=("full",))
    assert [variant_of(spec, r) for r in (0, 6, 7, 8)] == [0, 0, 1, 1]
    assert [k for k, *_ in _jobs(spec)] == [(1024, "reference"), (1024, "reference-1"), (1024, "full")]
    assert reference_name(0) == "reference" and reference_name(2) == "reference-2"


def test_rotations_put_every_needle_at_every_depth():
    depths = [0.0, 0.5, 1.0]
    seen = {(x, d) for r in range(3) for x, d in place_needles(NEEDLES, depths, r).items()}
    assert seen == {(x, d) for x in NEEDLES for d in depths}


def _plain_lls(lm, ctx, branch):
    """Option log-likelihoods of the unmodified model (its own sdpa), the same chunks, no loop, no branching."""
    from transformers import DynamicCache

    from vrex.golden.threads import torch_threads

    model, embed = lm.model, lm.model.get_input_embeddings()
    out = {}
    with torch.no_grad(), torch_threads():             # the thread count the loop runs with: same reduction order
        for opt, ids in zip(branch.options, branch.option_ids):
            rows = list(ctx.segments) + [(QUESTION, len(branch.question_ids))] + \
                ([(ANSWER, len(ids) - 1)] if len(ids) > 1 else [])
            steps = session_steps(Trace(segments_from_lengths(rows), {}, {}))
            emb = torch.cat([ctx.embeds, embed(torch.tensor(branch.question_ids)).float(),
                             embed(torch.tensor(ids[:-1])).float()])
            cache, lps = DynamicCache(config=model.config), []
            for st in steps:
                r = model(inputs_embeds=emb[st.start:st.end][None], cache=cache, use_cache=True, logits_to_keep=1)
                lps.append(torch.log_softmax(r.logits[0, -1].double(), -1))
            first = len(ctx.segments)          # the question step's logits predict the first option token
            out[opt] = sum(float(lps[first + j][t]) for j, t in enumerate(ids))
    return out


def test_full_in_the_loop_reproduces_the_unmodified_model_bit_for_bit(tiny):
    cfg, lm = tiny
    _, ctx = _context(lm)
    got = run_cell(cfg, lm, ctx, "full", BaselineSettings())
    for b in ctx.branches:
        assert got["branches"][b.key]["log_likelihood"] == _plain_lls(lm, ctx, b)


def _unbranched_lls(cfg, lm, ctx, branch, method):
    """The method in the loop over the whole context + question + option, one fresh run per option."""
    from vrex.golden.evaluation.niah.haystack import Context

    out = {}
    for opt, ids in zip(branch.options, branch.option_ids):
        one = type(branch)(branch.needle, branch.question_ids, (opt,), (ids,), 0)
        c = Context(ctx.embeds, ctx.segments, ctx.needle_tokens, ctx.depths, [one])
        out[opt] = run_cell(cfg, lm, c, method, BaselineSettings())["branches"][one.key]["log_likelihood"][opt]
    return out


def test_branching_from_the_cached_haystack_equals_running_the_whole_context(tiny):
    cfg, lm = tiny
    _, ctx = _context(lm)
    got = run_cell(cfg, lm, ctx, "resv", BaselineSettings())
    for b in ctx.branches[:2]:
        assert got["branches"][b.key]["log_likelihood"] == _unbranched_lls(cfg, lm, ctx, b, "resv")


def test_branching_equals_the_whole_context_on_a_sliding_window_model(tmp_path):
    """Gemma 3's sliding-window layers drop old keys; a branch's crop must roll back to the branch point anyway."""
    folder = llm_fixtures.save_tiny_llm(tmp_path / "sliding", context=1024, sliding_window=32)
    cfg, lm = llm_fixtures.tiny_cfg(**{"resv.recent_window_tokens": WINDOW}), load_model(str(folder), cache=False)
    _, ctx = _context(lm)
    got = run_cell(cfg, lm, ctx, "resv", BaselineSettings())
    b = ctx.branches[1]
    assert got["branches"][b.key]["log_likelihood"] == _unbranched_lls(cfg, lm, ctx, b, "resv")


class _Nothing(RetrievalPolicy):
    name = "nothing"

    def select(self, ctx):
        return [ctx.offloaded[:0] for _ in ctx.heads]


def test_a_batch_of_haystacks_equals_each_run_alone(tiny):
    """Two haystacks (needles in other slots, the second asked in option order 1) as one batch: each sequence's
    log-likelihoods are its own run's up to the batched products' rounding, its selections and ratios the same."""
    cfg, lm = tiny
    hay = _haystack(lm)
    ctxs = [build_context(lm, hay, place_needles(NEEDLES, [0.0, 0.5, "window"], r), kinds=("what", "first"),
                          window_tokens=WINDOW, order_offset=r) for r in (0, 1)]
    both = run_cell(cfg, lm, ctxs, "resv", BaselineSettings())
    for c, got in zip(ctxs, both):
        alone = run_cell(cfg, lm, c, "resv", BaselineSettings())
        assert set(got["branches"]) == set(alone["branches"]) == {b.key for b in c.branches}
        for k, b in alone["branches"].items():
            assert got["branches"][k]["log_likelihood"] == pytest.approx(b["log_likelihood"], rel=1e-4, abs=1e-4)
            assert got["branches"][k]["needle"] == b["needle"] and got["branches"][k]["truth"] == b["truth"]
        assert (got["frame_ratio"], got["text_ratio"]) == pytest.approx((alone["frame_ratio"], alone["text_ratio"]))
    with pytest.raises(ValueError, match="one layout"):
        run_cell(cfg, lm, [ctxs[0], build_context(lm, hay, place_needles(NEEDLES, [0.0], 0), kinds=("when",),
                                                  window_tokens=WINDOW)], "resv", BaselineSettings())


def test_the_needle_oracle_fetches_exactly_the_needles_and_full_minus_needle_never(tiny):
    cfg, lm = tiny
    _, ctx = _context(lm)
    oracle = run_cell(cfg, lm, ctx, "needle_oracle", BaselineSettings())
    minus = run_cell(cfg, lm, ctx, "full_minus_needle", BaselineSettings())
    for x in ("coffee", "rocket"):
        assert oracle["branches"][x + "#0"]["needle"]["hit_rate"] == 1.0
        assert minus["branches"][x + "#0"]["needle"]["hit_rate"] == 0.0
        assert oracle["branches"][x + "#0"]["needle"]["missed"] == {}
    # complementary selections: the needles' 16 of ~150 offloaded tokens, and every other one
    assert 0.0 < oracle["text_ratio"] < 0.25 and 0.75 < minus["text_ratio"] < 1.0
    assert oracle["text_ratio"] + minus["text_ratio"] == pytest.approx(1.0)


def test_fetching_nothing_loses_the_offloaded_needles_and_fetching_everything_is_full_attention(tiny, monkeypatch):
    cfg, lm = tiny
    _, ctx = _context(lm)
    full = run_cell(cfg, lm, ctx, "full", BaselineSettings())
    every = run_cell(cfg, lm, ctx, "flexgen", BaselineSettings())          # fetches every offloaded token
    monkeypatch.setattr(niah_run, "make_policies", lambda *a, **k: [_Nothing()])
    nothing = run_cell(cfg, lm, ctx, "nothing", BaselineSettings())
    for x in ("coffee", "rocket"):                                          # offloaded at the question
        assert every["branches"][x + "#0"]["log_likelihood"] == full["branches"][x + "#0"]["log_likelihood"]
        assert every["branches"][x + "#0"]["needle"]["hit_rate"] == 1.0
        assert nothing["branches"][x + "#0"]["needle"]["hit_rate"] == 0.0
        lost = nothing["branches"][x + "#0"]["needle"]
        assert sum(lost["missed"].values()) == lost["selections"] == sum(lost["layer_selections"].values()) > 0
        assert {k.split(".")[0] for k in lost["missed"]} == set(lost["layer_selections"])
        assert nothing["branches"][x + "#0"]["log_likelihood"] != full["branches"][x + "#0"]["log_likelihood"]
    resident = nothing["branches"]["chelsea#0"]["needle"]                     # depth 1: in the window
    assert resident["selections"] == 0 and resident["resident_selections"] > 0
    assert nothing["text_ratio"] == 0.0 and every["text_ratio"] == 1.0


def test_bad_needles_depths_lengths_and_options(tiny, tmp_path, monkeypatch):
    cfg, lm = tiny
    with pytest.raises(UsageError, match="unknown needle 'nope'"):
        needle_names("coffee,nope")
    with pytest.raises(UsageError, match="a depth is a fraction"):
        place_needles(NEEDLES, [0.0, 1.5], 0)
    with pytest.raises(UsageError, match="must hold the truth"):
        check_options(Needle("coffee", "coffee", ("tea", "tea", "milk", "wine")))
    from vrex.golden.evaluation.niah.haystack import build_haystack
    from vrex.golden.traces.video import VideoSpec

    video = VideoSpec(clips=("carphone_pristine",), fps=2.0)
    with pytest.raises(UsageError, match="holds no frame"):
        build_haystack(cfg, lm, video, 20, NEEDLES, context=1024)
    with pytest.raises(UsageError, match="beyond the model's 1024-token context"):
        build_haystack(cfg, lm, video, 5000, NEEDLES, context=1024)
    from vrex.golden.evaluation.niah import needles as needles_mod

    (tmp_path / "coffee.png").write_bytes(b"not a png")
    monkeypatch.setattr(needles_mod, "skimage_data_dir", lambda: tmp_path)
    with pytest.raises(TraceError, match="cannot be decoded"):
        needle_image("coffee")


def test_cli_rejects_bad_input_in_one_sentence_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "r.json"
    for args, message in ((["--needles", "nope"], "unknown needle"), (["--depths", "0,2"], "a depth is a fraction"),
                          (["--lengths", "abc"], "give token counts"), (["--methods", "full,nope"], "unknown method"),
                          (["--methods", "resv_row@1.5"], "p values in (0, 1]"), (["--orders", "6"], "at most 5"),
                          (["--kinds", "what,why"], "unknown question kind 'why'"),
                          (["--depths", "0.5,middle"], "a depth is a fraction"),
                          (["--methods", "rekv@1.5"], "a fraction in (0, 1]"),
                          (["--methods", "quest@0"], "a fraction in (0, 1]"),
                          (["--kinds", "first", "--needles", "coffee"], "at least two --needles")):
        assert main(["niah", *args, "--json", str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
        assert not out.exists()


def test_the_cli_runs_a_small_grid_end_to_end_and_resumes_from_saved_cells(tiny, tmp_path, capsys, monkeypatch):
    cfg, lm = tiny
    monkeypatch.setenv("VREX_BUILD_DIR", str(tmp_path / "build"))
    yaml = tmp_path / "tiny.yaml"
    yaml.write_text(cfg.dump_yaml())
    out = tmp_path / "r.json"
    args = ["niah", "-c", str(yaml), "--model", str(lm.source.path), "--lengths", "560", "--depths", "0.5,window",
            "--needles", "coffee,rocket", "--kinds", "what,first", "--rotations", "2",
            "--methods", "full,resv,rekv,rekv@0.5,needle_oracle", "--clips", "carphone_pristine", "--fps", "2",
            "--json", str(out), "-o", str(tmp_path / "plots"), "-q"]
    monkeypatch.setattr("vrex.golden.cpu.native_bfloat16", lambda: False)   # a CPU that emulates bfloat16
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "niah method" in printed and "95% CI" in printed and "targets (issues 23, 32) of resv" in printed
    assert "no native bfloat16" in printed and "--dtype float32 runs faster" in printed
    import json

    r = json.loads(out.read_text())
    checked = {t["name"]: t for t in r["targets"]}
    assert {"frame traffic", "text traffic"} <= set(checked)
    rekv_frame = r["methods"]["rekv"]["niah"]["ratio"]["frame"]
    assert checked["frame traffic"]["bound"] == pytest.approx(rekv_frame / 3)
    assert set(r["methods"]) == {"full", "resv", "rekv", "rekv@0.5", "needle_oracle"}
    assert r["model"]["name"] and "sha256" in r["model"]          # the model's facts, found under its dtype
    assert r["spec"]["dtype"] == "bfloat16"                         # the default: the model's trained precision
    asked = [q for q in r["questions"] if q["method"] == "resv"]
    # 2 haystacks × (2 what + 1 first); one needle of each haystack sits in the window: its questions are controls
    assert len(asked) == 6 and sorted((str(q["depth"]) for q in asked if q["kind"] == "what")) == ["0.5", "0.5",
                                                                                                  "window", "window"]
    assert [q["counted"] for q in asked if q["kind"] == "first"] == [False, False]
    assert {q["rotation"] for q in asked} == {0, 1} and {q["orders"] for q in asked} == {1}
    gone = set(r["dropped_groups"])
    assert gone <= set(r["full_attention_per_group"])
    for name, m in r["methods"].items():
        n = m["niah"]
        mine = [q for q in r["questions"] if q["method"] == name and q["counted"]
                and f"{q['kind']}:{'+'.join(q['subjects'])}" not in gone]
        assert n["n_questions"] == len(mine) and n["accuracy"] == (sum(q["correct"] for q in mine) / len(mine)
                                                                    if mine else None)
        if mine:
            lo, hi = n["accuracy_ci"]
            assert lo <= n["accuracy"] <= hi
        assert set(n) >= {"accuracy_ci", "delta_points", "delta_ci", "mcnemar_p_vs_full", "mcnemar_p_vs_rekv",
                          "per_kind", "per_length", "controls", "needle_hit_rate", "ratio"}
    assert r["methods"]["full"]["niah"]["ratio"]["frame"] == 1.0 and r["methods"]["rekv"]["niah"]["ratio"]["frame"] < 1
    assert set(r["iso_accuracy"]) <= {"rekv"}                  # rekv and rekv@0.5 are a sweep of two points
    assert r["single_point_sweeps"] == {}
    assert (tmp_path / "plots" / "niah-heatmaps.png").is_file()
    saved = sorted((tmp_path / "build" / "golden" / "niah" / "cells").glob("*.json"))
    assert len(saved) == 6                                   # reference + five methods
    # interrupted: one cell lost; the rerun runs only it and reports the same
    from vrex.golden.evaluation.niah import grid

    lost, = [f for f in saved if f.name.startswith("560-rekv_at_0.5-")]
    lost.unlink()
    ran, real = [], grid.cell
    monkeypatch.setattr(grid, "cell", lambda *a, **k: ran.append(a[3]) or real(*a, **k))
    assert main(args) == 0
    again = json.loads(out.read_text())
    assert ran == ["rekv@0.5"] and again["methods"] == r["methods"] and again["questions"] == r["questions"]
    monkeypatch.setattr(grid, "cell", lambda *a, **k: pytest.fail("a saved cell ran again"))
    assert main(args) == 0
    assert json.loads(out.read_text())["methods"] == r["methods"]
    # one more rotation in batches of two: the saved batch of rotations 0-1 is read, only rotation 2 runs
    from vrex.golden.evaluation.niah import run

    monkeypatch.setattr(grid, "cell", real)
    batches, run_real = [], run.run_cell
    monkeypatch.setattr(run, "run_cell", lambda cfg, lm, ctx, method, *a, **k:
                        batches.append((method, len(ctx) if isinstance(ctx, list) else 0))   # 0: a reference
                        or run_real(cfg, lm, ctx, method, *a, **k))
    rot = args.index("--rotations") + 1
    assert main([*args[:rot], "3", *args[rot + 1:], "--batch", "2"]) == 0
    # rotation 2 is the first of a second Latin square over the 2 slots: haystack variant 1, with its own reference
    assert sorted(batches) == sorted([("full", 0)] + [(m, 1) for m in ("full", "resv", "rekv", "rekv@0.5",
                                                                                 "needle_oracle")])
    assert len(list((tmp_path / "build" / "golden" / "niah" / "cells").glob("560-reference-1-*.json"))) == 1
    more = json.loads(out.read_text())
    assert {q["rotation"] for q in more["questions"]} == {0, 1, 2}
    assert [q for q in more["questions"] if q["rotation"] < 2] == r["questions"]


def test_the_flat_output_head_gives_the_heads_logits(tmp_path):
    from vrex.golden.evaluation.niah.grid import _flat_output_head

    folder = llm_fixtures.save_tiny_llm(tmp_path / "head", context=1024)
    lm = load_model(str(folder), cache=False)
    head = lm.model.get_output_embeddings()
    x = torch.randn(3, 2, lm.model.config.hidden_size)
    before = head(x[:, -1:])
    _flat_output_head(lm.model)
    _flat_output_head(lm.model)                                   # once is enough: a second call changes nothing
    assert torch.allclose(head(x[:, -1:]), before, rtol=1e-5, atol=1e-6) and head(x).shape == (*x.shape[:2], before.shape[-1])


def test_a_bfloat16_models_head_gives_float32_logits_of_its_weights(tmp_path):
    """bfloat16 logits are quantised (1/16 at 8–16): the benchmark's head is a float32 product of the same weights."""
    import torch.nn.functional as F

    from vrex.golden.evaluation.niah.grid import _flat_output_head

    folder = llm_fixtures.save_tiny_llm(tmp_path / "head16", context=1024)
    lm = load_model(str(folder), cache=False)
    lm.model.to(torch.bfloat16)
    head = lm.model.get_output_embeddings()
    x = (8 * torch.randn(4, 1, lm.model.config.hidden_size)).bfloat16()
    quantised = head(x)
    _flat_output_head(lm.model)
    y = head(x)
    want = F.linear(x.reshape(4, -1).float(), head.weight.float()).reshape(4, 1, -1)
    assert y.dtype == torch.float32 and torch.equal(y, want)
    assert torch.allclose(y, quantised.float(), rtol=2e-2, atol=0.2)
    # the float32 logits resolve what bfloat16 rounds together
    assert len(torch.unique(y)) > len(torch.unique(quantised.float()))


def test_question_groups_full_attention_cannot_answer_are_dropped_for_every_method():
    from vrex.golden.evaluation.niah.grid import GridSpec, aggregate

    def branch(needle, kind, right, counted=True):
        truth, other = ("cat", "dog") if kind == "what" else ("end", "beginning")
        return {"needle_name": needle, "kind": kind, "question": f"{kind}:{needle}", "subjects": [needle],
                "counted": counted, "order": 0, "truth": truth, "depth": 0.5, "exact_match": right, "needle": None,
                "log_likelihood": {truth: -1.0 if right else -5.0, other: -3.0}}
    ref = {f"{k}:{x}#0" if k != "what" else f"{x}#0": {"log_likelihood": {"cat": -3.0, "dog": -3.0, "end": -3.0,
                                                                          "beginning": -3.0}}
           for k in ("what", "when") for x in ("a", "b")}
    cells = {"1024/ref/reference": {"branches": ref}}
    # full answers what:a (2 of 2) and when:b (2 of 2), never what:b nor when:a; "m" is right everywhere
    for r in (0, 1):
        for m, right in (("full", {"a#0": True, "b#0": False, "when:a#0": False, "when:b#0": True}),
                         ("m", dict.fromkeys(("a#0", "b#0", "when:a#0", "when:b#0"), True))):
            br = {"a#0": branch("a", "what", right["a#0"]), "b#0": branch("b", "what", right["b#0"]),
                  "when:a#0": branch("a", "when", right["when:a#0"]), "when:b#0": branch("b", "when", right["when:b#0"])}
            cells[f"1024/{r}/{m}"] = {"method": m, "rotation": r, "frame_ratio": 0.5, "text_ratio": 0.5, "branches": br}
    for b in ref:
        ref[b]["log_likelihood"] = {"cat": -3.0, "dog": -3.0, "end": -3.0, "beginning": -3.0}
    agg = aggregate(GridSpec(needles=("a", "b"), methods=("full", "m"), kinds=("what", "when")), {"cells": cells})
    assert agg["dropped_groups"] == ["what:b", "when:a"] and agg["dropped_needles"] == []
    assert agg["full_attention_per_group"] == {"what:a": 1.0, "what:b": 0.0, "when:a": 0.0, "when:b": 1.0}
    assert agg["methods"]["full"]["niah"]["n_questions"] == agg["methods"]["m"]["niah"]["n_questions"] == 4
    assert agg["methods"]["m"]["niah"]["accuracy"] == 1.0 and agg["methods"]["full"]["niah"]["accuracy"] == 1.0


def test_a_sweep_of_one_point_is_named_not_read():
    from vrex.golden.evaluation.niah.grid import GridSpec, aggregate
    from vrex.golden.evaluation.niah.report import format_table

    def cell(m, right):
        b = {"needle_name": "coffee", "order": 0, "truth": "coffee", "depth": 0.5, "exact_match": right,
             "needle": None, "log_likelihood": {"coffee": -1.0 if right else -5.0, "tea": -3.0}}
        return {"method": m, "rotation": 0, "frame_ratio": 0.3, "text_ratio": 0.2, "branches": {"coffee#0": b}}
    ref = {"coffee#0": {"log_likelihood": {"coffee": -3.0, "tea": -3.0}}}
    grid = {"cells": {"1024/ref/reference": {"branches": ref}, "1024/0/full": cell("full", True),
                      "1024/0/quest@0.3": cell("quest@0.3", False)}}
    agg = aggregate(GridSpec(needles=("coffee",), methods=("full", "quest@0.3"), kinds=("what",)), grid)
    assert agg["iso_accuracy"] == {} and agg["single_point_sweeps"] == {"quest": "quest@0.3"}
    assert "no iso-accuracy traffic for quest: quest@0.3 is a sweep of one point" in format_table(agg)


def test_the_misses_of_wrong_answers_name_the_layers_and_heads():
    from vrex.golden.evaluation.niah.grid import _misses

    def q(correct, hits, missed, layers):
        sel = sum(layers.values())
        return {"correct": correct, "selections": sel, "hit_rate": hits / sel, "missed": missed,
                "layer_selections": layers, "kv_heads": 2}
    got = _misses([q(True, 8, {}, {"0": 4, "1": 4}),
                   q(False, 5, {"1.0": 2, "1.1": 1}, {"0": 4, "1": 4}),          # layer 1 missed 3 of its 4
                   q(False, 8, {}, {"0": 4, "1": 4})])                          # fetched and still wrong
    assert got["hit_rate_right"] == 1.0 and got["hit_rate_wrong"] == round(13 / 16, 4) and got["wrong"] == 2
    assert got["missed_share_per_layer"] == {"1": 3 / 8, "0": 0.0}
    assert got["worst_heads"] == {"1.0": 0.5, "1.1": 0.25}              # head 0 of layer 1: 2 of its 4 selections


def test_an_interrupted_grid_says_its_cells_are_kept(tmp_path, capsys, monkeypatch):
    from vrex.golden.evaluation.niah import grid

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(grid, "run_grid", interrupted)
    out = tmp_path / "r.json"
    assert main(["niah", "--quick", "--json", str(out), "-q"]) == 130
    err = capsys.readouterr().err
    assert "interrupted; every finished cell is saved in" in err and "resumes" in err and "Traceback" not in err
    assert not out.exists()
