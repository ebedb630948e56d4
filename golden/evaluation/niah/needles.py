"""The needles: real photographs that ship in the scikit-image wheel, each with its question's options and truth.

The files are read from the installed ``skimage/data`` folder (the package is located, never imported, as timm's
class-name files are) and, for ``grace_hopper``, from matplotlib's ``mpl-data/sample_data``. A needle is kept only
where the video encoder's classifier names what the photograph shows (EfficientNet-Lite0's top classes: tripod for
``camera``, military uniform for ``grace_hopper``, web site for ``page``; docs/results-accuracy.md). Options are the truth and four distractors of the same kind; no distractor is another
needle's truth, so needles can share one haystack without making a question ambiguous. The needle set is the one
on which Qwen2.5-Coder-0.5B-Instruct answers with full attention (docs/results-accuracy.md; ``horse`` is kept as a
name but left out of the default set: full attention did not answer it in the first grid); a needle that the
full-attention model does not answer is reported and dropped from the score (:mod:`.grid`).
"""

from __future__ import annotations

import importlib.util
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from vrex.errors import TraceError, UsageError

__all__ = ["Needle", "NEEDLES", "DEFAULT_NEEDLES", "QUESTION", "WHEN_QUESTION", "FIRST_QUESTION", "WHEN_OPTIONS",
           "KINDS", "needle_names", "question_kinds", "skimage_data_dir", "needle_image"]

QUESTION = "Which of these objects appeared in one frame of the video? Options: {options}."
WHEN_QUESTION = "In which part of the video did the {object} appear? Options: {options}."
WHEN_OPTIONS = ("beginning", "middle", "end")      # the video's thirds
FIRST_QUESTION = "Which appeared first in the video, the {a} or the {b}? Options: {options}."
# Question kinds and their chance level (one option of n at random): *what* (the needle's identity among five),
# *when* (the third of the video the needle sits in), *first* (which of a pair of needles came first).
KINDS = {"what": 1 / 5, "when": 1 / 3, "first": 1 / 2}
IMAGE_SIDE = 224     # the video encoder's input (vrex.golden.traces.video.decode_frames)


@dataclass(frozen=True)
class Needle:
    name: str
    truth: str
    distractors: tuple[str, ...]
    file: str = ""                     # the photograph's file stem (default: the name)

    def options(self, order: int = 0) -> list[str]:
        """The truth and the distractors in a fixed shuffled order per needle (the truth is not always first),
        rotated cyclically by ``order``: over ``len(options)`` orders every option is asked at every position once."""
        o = [self.truth, *self.distractors]
        random.Random(self.name).shuffle(o)
        k = order % len(o)
        return o[k:] + o[:k]

    def question(self, order: int = 0) -> str:
        return QUESTION.format(options=", ".join(self.options(order)))


NEEDLES = {n.name: n for n in (
    Needle("chelsea", "cat", ("dog", "bird", "rabbit", "fox")),
    Needle("coffee", "coffee", ("tea", "juice", "wine", "milk")),
    Needle("rocket", "rocket", ("airplane", "helicopter", "balloon", "ship")),
    Needle("astronaut", "astronaut", ("pilot", "diver", "firefighter", "soldier")),
    Needle("horse", "horse", ("cow", "deer", "sheep", "goat")),
    Needle("motorcycle_left", "motorcycle", ("car", "truck", "bus", "tractor")),
    Needle("camera", "camera", ("telescope", "microphone", "lamp", "umbrella")),
    Needle("coins", "coins", ("buttons", "marbles", "keys", "rings")),
    Needle("tripod", "tripod", ("easel", "ladder", "stool", "umbrella"), file="camera"),
    Needle("grace_hopper", "uniform", ("apron", "kimono", "swimsuit", "pajamas")),
    Needle("page", "document", ("painting", "map", "photograph", "chart")),
)}
DEFAULT_NEEDLES = ("chelsea", "coffee", "rocket", "astronaut", "motorcycle_left", "tripod", "grace_hopper", "page")


def question_kinds(text: str | None) -> tuple[str, ...]:
    """``"what,when"`` → the question kinds, each known; None → every kind."""
    if text is None:
        return tuple(KINDS)
    kinds = tuple(k for k in text.split(",") if k)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise UsageError(f"--kinds: unknown question kind {unknown[0] if unknown else text!r}; kinds are "
                         f"{', '.join(KINDS)}.")
    return kinds


def needle_names(text: str | None) -> list[str]:
    """``"chelsea,coffee"`` → needle names, each known; None → the default set."""
    if text is None:
        return list(DEFAULT_NEEDLES)
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in NEEDLES]
    if unknown or not names:
        raise UsageError(f"--needles: unknown needle {unknown[0] if unknown else text!r}; needles are "
                         f"{', '.join(NEEDLES)}.")
    if len(set(names)) != len(names):
        raise UsageError(f"--needles {text}: a needle is named twice.")
    return names


def check_options(needle: Needle) -> None:
    """An option list must hold the truth once and no duplicate."""
    opts = needle.options()
    if opts.count(needle.truth) != 1 or len(set(opts)) != len(opts):
        raise UsageError(f"needle {needle.name}: its options {opts} must hold the truth {needle.truth!r} once and no "
                         "option twice.")


def skimage_data_dir() -> Path:
    found = importlib.util.find_spec("skimage")
    folder = Path(list(found.submodule_search_locations)[0]) / "data" if found and found.submodule_search_locations \
        else None
    if folder is None or not folder.is_dir():
        raise TraceError("the needles are scikit-image's sample photographs; install the wheel with: pip install "
                         "--no-deps scikit-image==0.26.0 (scripts/bootstrap.sh does).")
    return folder


def _matplotlib_sample_dir() -> list[Path]:
    found = importlib.util.find_spec("matplotlib")
    if not found or not found.submodule_search_locations:
        return []
    folder = Path(list(found.submodule_search_locations)[0]) / "mpl-data" / "sample_data"
    return [folder] if folder.is_dir() else []


def needle_image(name: str) -> torch.Tensor:
    """The needle photograph as ``(3, 224, 224)`` float in [0, 1], resized and centre-cropped as the haystack's
    frames are (short side to 224, INTER_AREA)."""
    import cv2
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    stem = NEEDLES[name].file or name if name in NEEDLES else name
    folders = [skimage_data_dir()] + _matplotlib_sample_dir()
    files = [p for folder in folders for p in folder.iterdir()
             if p.stem == stem and p.suffix.lower() in (".png", ".jpg", ".jpeg")]
    if not files:
        raise TraceError(f"needle {name}: no image {stem}.png/.jpg in scikit-image's data folder {folders[0]} (nor "
                         "matplotlib's sample data); reinstall scikit-image 0.26.0.")
    try:
        with Image.open(files[0]) as im:
            rgb = np.asarray(im.convert("RGB"))
    except (OSError, UnidentifiedImageError) as e:
        raise TraceError(f"needle {name}: {files[0].name} cannot be decoded ({e}); reinstall scikit-image.") from None
    h, w = rgb.shape[:2]
    s = IMAGE_SIDE / min(h, w)
    img = cv2.resize(rgb, (max(IMAGE_SIDE, round(w * s)), max(IMAGE_SIDE, round(h * s))),
                     interpolation=cv2.INTER_AREA)
    y0, x0 = (img.shape[0] - IMAGE_SIDE) // 2, (img.shape[1] - IMAGE_SIDE) // 2
    crop = np.ascontiguousarray(img[y0:y0 + IMAGE_SIDE, x0:x0 + IMAGE_SIDE])
    return torch.from_numpy(crop).permute(2, 0, 1).float() / 255.0
