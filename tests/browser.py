"""Render a local page in headless Chromium (Debian ``chromium`` driven by Playwright) and report what a reader
would see: every image decoded and drawn, no console errors, no failed requests, and a full-page screenshot."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = shutil.which("chromium")
# Flags for a root user on a machine without a network (Chromium's background services would otherwise try to
# reach the internet at every start); Playwright adds --headless and a fresh --user-data-dir (the profile below).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
MIN_PLOT_PX = 100        # a plot is drawn at least this wide and high
MIN_PLOT_COLOURS = 16    # a drawn plot has many colours; a broken-image icon or an empty box has a handful

_IMAGES_JS = """Array.from(document.images).map(i => {
  const r = i.getBoundingClientRect();
  return {src: i.getAttribute('src'), complete: i.complete, natural: [i.naturalWidth, i.naturalHeight],
          box: [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]};
})"""


@dataclass
class PageCheck:
    images: list[dict]
    console: list[str]
    failed_requests: list[str]
    text: str
    screenshot: Path
    blank_images: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """One line per thing a reader would notice: an image that did not load or decode, an image drawn blank
        or too small, a console error or warning, a request that failed."""
        out = [f"image {i['src']} not decoded" for i in self.images if not (i["complete"] and i["natural"][0])]
        out += [f"image {src} drawn blank or too small" for src in self.blank_images]
        out += [f"console: {m}" for m in self.console]
        out += [f"request failed: {u}" for u in self.failed_requests]
        return out


def render(page_file: Path, screenshot: Path, width: int = 1200) -> PageCheck:
    """Open ``page_file`` in headless Chromium, wait for it to load, take a full-page screenshot and check it."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    console, failed = [], []
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
                                                   viewport={"width": width, "height": 900})
        try:
            page = ctx.new_page()
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning")
                    else None)
            page.on("pageerror", lambda e: console.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.goto(Path(page_file).absolute().as_uri(), wait_until="load")
            images = page.evaluate(_IMAGES_JS)
            text = page.evaluate("document.body.innerText")
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            ctx.close()
    shot = Image.open(screenshot).convert("RGB")
    blank = []
    for i in images:
        x, y, w, h = (round(v) for v in i["box"])
        crop = shot.crop((x, y, x + w, y + h))
        colours = crop.getcolors(maxcolors=MIN_PLOT_COLOURS)   # None: more colours than the limit
        if w < MIN_PLOT_PX or h < MIN_PLOT_PX or colours is not None:
            blank.append(i["src"])
    return PageCheck(images, console, failed, text, Path(screenshot), blank)
