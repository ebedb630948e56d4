"""Video tokens → LLM input embeddings without training: the semantic projector and the random ablation.

SmolLM2 has no vision tower, and no trained projector ships offline. Both projectors start from the reduced
EfficientNet-Lite0 tokens of :func:`vrex.golden.traces.video.reduce_tokens` (``(frames, tokens_per_frame, 1280)``):

- **semantic** (default): EfficientNet-Lite0's own ImageNet classifier head (``_fc``, 1280 → 1000, trained
  weights) gives each token a class distribution ``p = softmax(W x + b)``. The token's input embedding is the
  probability-weighted mix of the LLM's embeddings of the ``top`` (5) most probable class names, with the top
  probabilities renormalised to sum to 1: ``e = Σ_c p̂_c · E(name_c)``. ``E(name)`` is the mean of the LLM's input
  embeddings of the tokens of ``" " + name`` (the name as a word inside a sentence). So the LLM reads inputs on its
  own embedding manifold, and the video's temporal redundancy carries over (same patch, same classes).
  Class names: the first lemma of each of the 1000 ImageNet-1k synsets ("tench, Tinca tinca" → "tench"), in
  class-index order, from timm's data files ``timm/data/_info/imagenet_synsets.txt`` and
  ``imagenet_synset_to_lemma.txt``. timm is installed without its dependencies (``pip install --no-deps
  timm==1.0.31``) and located with ``importlib.util.find_spec``, never imported (it would need torchvision).
- **random** (``--projector random``): the features standardised per channel over the session (z-score), a seeded
  Gaussian projection ``N(0, 1/1280)`` to the LLM width, then one scale so the mean token norm equals the mean norm
  of the LLM's input embeddings (4 096 evenly spaced token ids).

Embeddings are taken through the model's input-embedding module, so a model that scales its embeddings (Gemma:
× √hidden) gets visual inputs on the same scale as its text.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from vrex.errors import TraceError

from vrex.golden.traces.transformer import seeded_generator
from vrex.golden.traces.video import classifier_head
from vrex.golden.traces.llm.model import package_version

__all__ = ["PROJECTORS", "imagenet_class_names", "class_name_embeddings", "semantic_embeddings", "random_embeddings",
           "mean_embedding_norm", "project", "TOP_CLASSES"]

PROJECTORS = ("semantic", "random")
TOP_CLASSES = 5
_TIMM_FIX = "install them with: pip install --no-deps timm==1.0.31 (scripts/bootstrap.sh does), or use --projector random"


def _timm_info_dir() -> Path:
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        raise TraceError(f"the semantic projector reads ImageNet class names from timm's data files; {_TIMM_FIX}.")
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "_info"


def imagenet_class_names() -> list[str]:
    """The first lemma of each ImageNet-1k class, in class-index order (timm's data files, timm not imported)."""
    d = _timm_info_dir()
    try:
        synsets = d.joinpath("imagenet_synsets.txt").read_text().split()
        lemmas = dict(line.split("\t", 1) for line in d.joinpath("imagenet_synset_to_lemma.txt").read_text()
                      .splitlines() if "\t" in line)
    except OSError as e:
        raise TraceError(f"timm's ImageNet class-name file {Path(e.filename).name if e.filename else ''} cannot be "
                         f"read in {d}; {_TIMM_FIX}.") from None
    if len(synsets) != 1000 or any(s not in lemmas for s in synsets):
        raise TraceError(f"timm's ImageNet class-name files in {d} do not list 1000 named classes; {_TIMM_FIX}.")
    return [lemmas[s].split(",")[0].strip() for s in synsets]


def class_name_embeddings(tokenizer, embed, names: list[str]) -> torch.Tensor:
    """``(len(names), hidden)``: mean input embedding of the tokens of ``" " + name``.

    ``embed`` is the model's input-embedding module (its forward applies any scale the model uses, e.g. Gemma's
    √hidden), or a weight matrix."""
    ids = tokenizer([" " + n for n in names], add_special_tokens=False)["input_ids"]
    lookup = embed if callable(embed) else (lambda i: embed[i])
    rows = []
    with torch.no_grad():
        for i, row in enumerate(ids):
            if not row:
                raise TraceError(f"the tokenizer gives no token for the class name {names[i]!r}; use --projector "
                                 "random.")
            rows.append(lookup(torch.tensor(row)).float().mean(0))
    return torch.stack(rows)


def mean_embedding_norm(embed, vocab: int, sample: int = 4096) -> float:
    """Mean norm of the input embeddings of ``sample`` evenly spaced token ids (all when the vocabulary is smaller)."""
    ids = torch.linspace(0, vocab - 1, min(vocab, sample)).round().long().unique()
    with torch.no_grad():
        return float(embed(ids).float().norm(dim=-1).mean())


def semantic_embeddings(tokens: torch.Tensor, names_emb: torch.Tensor, top: int = TOP_CLASSES) -> torch.Tensor:
    """Mix of class-name embeddings weighted by the classifier's renormalised top-``top`` probabilities."""
    head = classifier_head()
    with torch.no_grad():
        probs = torch.softmax(head(tokens.float()), -1)                  # (..., 1000)
        p, idx = probs.topk(top, dim=-1)
        p = p / p.sum(-1, keepdim=True)
        return (p[..., None] * names_emb[idx]).sum(-2)


def random_embeddings(tokens: torch.Tensor, width: int, target_norm: float, seed: int) -> torch.Tensor:
    """Seeded Gaussian projection of the z-scored features, scaled to ``target_norm`` on average."""
    flat = tokens.reshape(-1, tokens.shape[-1]).float()
    z = (flat - flat.mean(0)) / (flat.std(0) + 1e-5)
    proj = torch.randn(width, z.shape[1], generator=seeded_generator("llm-projector", seed)) * z.shape[1] ** -0.5
    emb = z @ proj.T
    emb = emb * (target_norm / emb.norm(dim=-1).mean().clamp_min(1e-12))
    return emb.reshape(*tokens.shape[:-1], width)


def project(kind: str, tokens: torch.Tensor, tokenizer, embed, seed: int) -> tuple[torch.Tensor, dict]:
    """Input embeddings ``(frames, tokens_per_frame, hidden)`` of the reduced video tokens, and provenance.

    ``embed``: the model's input-embedding module."""
    if kind == "semantic":
        names = imagenet_class_names()
        emb = semantic_embeddings(tokens, class_name_embeddings(tokenizer, embed, names))
        return emb, {"kind": "semantic", "classifier": "EfficientNet-Lite0 _fc (ImageNet-1k, trained weights)",
                     "class_names": f"first lemma, timm {package_version('timm')} data/_info/imagenet_synset_to_lemma.txt",
                     "top_classes": TOP_CLASSES, "trained": False}
    if kind == "random":
        norm = mean_embedding_norm(embed, embed.weight.shape[0])
        return (random_embeddings(tokens, embed.weight.shape[1], norm, seed),
                {"kind": "random", "seed": seed, "target_norm": round(norm, 4), "trained": False})
    raise TraceError(f"--projector {kind!r}: choose {' or '.join(PROJECTORS)}.")
