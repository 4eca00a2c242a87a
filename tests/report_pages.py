"""Every sample submission of every task scored in-process, as Codabench lays it out, for the checks of the
pages themselves (tests/test_report_pages.py) and for ``make screenshots``.

- :func:`score_samples`: ref/ is reference_data/<task>, res/ the sample (a code submission runs through
  ``codabench.ingest_main`` first, as the prediction step would), the page lands in OUT/<task>/<sample>/.
  While it runs, every text that a figure draws is measured with the renderer of that save: texts that leave
  the figure by more than 1 px are recorded (docs/codabench.md#reports). srbench.synthetic is scored on data
  with one seed of ten (FEWER_RUNS): its demo data takes minutes per sample.
- :func:`measure_widths`: pages shown in headless Chromium in iframes of a given width, as Codabench shows
  them; an injected script returns each one's document.documentElement scrollWidth and clientWidth and every
  element reaching past the right edge, written into the DOM that ``--dump-dom`` prints.
- ``python tests/report_pages.py --out build/screenshots``: PNGs at 1400 px and 760 px of one page per task.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from machine_needs import missing

#: Debian's package name and binary; CI installs it (.ci/run).
CHROMIUM = "chromium"
#: Codabench shows detailed_results.html in an iframe about this wide.
IFRAME_WIDTH = 760
#: A text may reach this far past the figure's edge (antialiasing) before it counts as clipped.
TOLERANCE_PX = 1.0


@dataclass
class Page:
    task: str
    sample: str
    exit_code: int
    html: Path
    figures: int = 0  # how many figures were saved for it
    clipped: list[str] = field(default_factory=list)  # "figure 'title': text '...' at x=-12 px"


def _figure_name(fig) -> str:
    titles = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) else []
    titles += [ax.get_title() for ax in fig.axes if ax.get_title()]
    return "; ".join(titles) or "untitled figure"


def _outside(box, frame) -> str:
    """Where box leaves frame by more than the tolerance, e.g. "x=-12 px" or "right edge 590 > 576 px"."""
    found = []
    if box.x0 < frame.x0 - TOLERANCE_PX:
        found.append(f"x={box.x0 - frame.x0:.0f} px")
    if box.x1 > frame.x1 + TOLERANCE_PX:
        found.append(f"right edge {box.x1:.0f} > {frame.x1:.0f} px")
    if box.y0 < frame.y0 - TOLERANCE_PX:
        found.append(f"bottom y={box.y0 - frame.y0:.0f} px")
    if box.y1 > frame.y1 + TOLERANCE_PX:
        found.append(f"top edge {box.y1:.0f} > {frame.y1:.0f} px")
    return ", ".join(found)


@dataclass
class ClippedText:
    figure: object  # the matplotlib Figure
    text: str
    where: str  # e.g. "x=-12 px"


@contextlib.contextmanager
def clipped_text_recorder(found: list[ClippedText], saved: list | None = None):
    """While active, every Figure.savefig appends to found each drawn text that leaves the figure (and the
    figure to saved).

    Text.draw is wrapped for the time of each save, so only the texts really drawn are measured (a tick
    outside the view keeps a stale position but is never drawn), with the renderer and dpi of that save."""
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    original_savefig, original_draw = Figure.savefig, Text.draw

    def savefig(fig, *args, **kwargs):
        drawn: list[tuple[str, object, object]] = []

        def draw(text, renderer):
            original_draw(text, renderer)
            if text.get_visible() and text.get_text().strip() and text.figure is fig:
                drawn.append((text.get_text(), text.get_window_extent(renderer), fig.bbox.frozen()))

        Text.draw = draw
        try:
            return original_savefig(fig, *args, **kwargs)
        finally:
            Text.draw = original_draw
            if saved is not None:
                saved.append(fig)
            found.extend(ClippedText(fig, content, _outside(box, frame)) for content, box, frame in drawn
                         if _outside(box, frame))

    Figure.savefig = savefig
    try:
        yield found
    finally:
        Figure.savefig = original_savefig


def describe(clipped: list[ClippedText], saved: list, page: Path) -> list[str]:
    """One line per clipped text: "figure 'ALT': text 'egression' at x=-12 px". A figure is named by its alt
    text on the page where the page has one image per saved figure (figure_html saves each once, in
    order), else by its titles."""
    alts = re.findall(r"<img alt='([^']*)' src='data:image/png", page.read_text()) if page.is_file() else []
    names = {id(fig): html.unescape(alt) for fig, alt in zip(saved, alts)} if len(alts) == len(saved) else {}
    return [f"figure '{names.get(id(c.figure)) or _figure_name(c.figure)}': text {c.text!r} at {c.where}"
            for c in clipped]


def _task_names() -> list[str]:
    from codascore.registry import all_tasks

    return list(all_tasks())


def _samples(root: Path, task: str) -> list[Path]:
    return sorted(p for p in (root / "sample_submissions" / task).iterdir() if p.is_dir())


def score_sample(root: Path, task_name: str, sample: Path, out: Path) -> Page:
    """Score one sample as the worker would (ingestion first for a task that has one) into out/page."""
    from codascore.codabench import ingest_main, score_main
    from codascore.registry import get_task

    work = out / "input"
    shutil.rmtree(out, ignore_errors=True)
    (work / "res").mkdir(parents=True)
    shutil.copytree(root / "reference_data" / task_name, work / "ref")
    # A results submission is copied into the prediction output; the ingestion then runs a code one.
    shutil.copytree(sample, work / "res", dirs_exist_ok=True)
    code = 0
    if get_task(task_name).has_ingestion:
        code = ingest_main([str(root / "input_data" / task_name), str(work / "res"),
                            str(root / "ingestion_program"), str(sample)])
    (work / "res" / "metadata").write_text(f"exitCode: null\nelapsedTime: null\ningestionExitCode: {code}\n"
                                           "ingestionElapsedTime: null\n")
    clipped: list[ClippedText] = []
    saved: list = []
    with clipped_text_recorder(clipped, saved):
        code = score_main([str(work), str(out / "page")])
    page = out / "page" / "detailed_results.html"
    return Page(task_name, sample.name, code, page, len(saved), describe(clipped, saved, page))


#: Tasks scored on data generated with fewer runs than the demo's: srbench.synthetic keeps every dataset
#: (so every row of its tables) but one seed of ten, as its demo data makes each sample score 160 models,
#: about two minutes a sample; the page's sections and figures are the same.
FEWER_RUNS = {"srbench.synthetic": {"seeds": [2082]}}


def generate_fewer_runs(root: Path) -> Path:
    """root with FEWER_RUNS's tasks generated in it (reference data, input data, samples)."""
    from codascore.registry import get_task

    for name, change in FEWER_RUNS.items():
        task = get_task(name)
        task.generate(root, {**task.defaults, **change}, progress=lambda message: None)
    return root


def score_samples(root: Path, fewer_runs: Path, out: Path) -> list[Page]:
    """Every sample of every task scored into out/TASK/SAMPLE, FEWER_RUNS's tasks from the fewer_runs root."""
    pages = []
    for task in _task_names():
        data = fewer_runs if task in FEWER_RUNS else root
        pages += [score_sample(data, task, sample, out / task / sample.name) for sample in _samples(data, task)]
    return pages


@pytest.fixture(scope="session")
def scored_pages(project_data, tmp_path_factory) -> list[Page]:
    """Every sample's Page, computed once per test session (import the fixture into the test module)."""
    fewer_runs = generate_fewer_runs(tmp_path_factory.mktemp("fewer_runs"))
    return score_samples(project_data, fewer_runs, tmp_path_factory.mktemp("pages"))


# --------------------------------------------------------------------------- the browser

#: Run in the page after load: the widths, and every element reaching past the right edge (its outermost
#: ones only: the children of an overflowing table would repeat it).
MEASURE_SCRIPT = """
  var root = document.documentElement, limit = root.clientWidth + 1, wide = [];
  var all = document.body.getElementsByTagName('*');
  for (var i = 0; i < all.length; i++) {
    var e = all[i], right = e.getBoundingClientRect().right;
    if (right > limit && !(e.parentElement && e.parentElement.getBoundingClientRect().right > limit)) {
      wide.push({tag: e.tagName.toLowerCase(), right: Math.round(right),
                 text: (e.getAttribute('alt') || e.textContent || '').trim().slice(0, 60)});
    }
  }
  return {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, wide: wide};
"""
#: Where the injected script writes what its body returns, as JSON, for --dump-dom to print.
RESULT = re.compile(r"<pre id=\"codascore-result\">(.*?)</pre>", re.S)


def chromium() -> str | None:
    return shutil.which(CHROMIUM)


def require_chromium() -> None:
    """Skip the calling test where chromium is missing; under CI=true, which installs it (.ci/run), fail."""
    if chromium():
        return
    message = f"{CHROMIUM} is not installed (apt-get install {CHROMIUM})"
    missing(message, "the browser tests")


def _headless(*args: str, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([chromium() or CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


def _run_script(page: Path, script: str, width: int, *flags: str):
    """What the script, appended to a copy of page, writes as JSON into <pre id=codascore-result>."""
    with tempfile.TemporaryDirectory(prefix="codascore-page-") as folder:
        copy = Path(folder) / "page.html"
        text = page.read_text(encoding="utf-8")
        copy.write_text(text.replace("</body>", script + "</body>", 1) if "</body>" in text else text + script,
                        encoding="utf-8")
        done = _headless(f"--window-size={width},2000", "--virtual-time-budget=10000", "--dump-dom", *flags,
                         copy.as_uri(), profile=Path(folder) / "profile")
    found = RESULT.search(done.stdout)
    if not found:
        raise RuntimeError(f"chromium printed no result for {page} (exit {done.returncode}): {done.stderr[-500:]}")
    return json.loads(html.unescape(found.group(1)))


def _after_load(expression: str) -> str:
    return ("<script>addEventListener('load', function () { var pre = document.createElement('pre');"
            f" pre.id = 'codascore-result'; pre.textContent = JSON.stringify({expression});"
            " document.body.appendChild(pre); });</script>")


def evaluate(page: Path, body: str, width: int = IFRAME_WIDTH):
    """What the JavaScript function body returns (JSON) when run after load in a copy of page shown in a
    window width px wide."""
    return _run_script(page, _after_load(f"(function () {{{body}}})()"), width)


def measure_widths(pages: list[Path], width: int = IFRAME_WIDTH, batch: int = 40) -> list[dict]:
    """For each page, {scrollWidth, clientWidth, wide: [{tag, right, text}]} as shown in an iframe width px
    wide, as Codabench shows it: one browser for a batch of pages, each in an iframe of a host page (file://
    frames may be read with --allow-file-access-from-files)."""
    measures = []
    for start in range(0, len(pages), batch):
        frames = "".join(f"<iframe src='{html.escape(p.resolve().as_uri())}' "
                         f"style='display:block;border:0;width:{width}px;height:3000px'></iframe>"
                         for p in pages[start:start + batch])
        with tempfile.TemporaryDirectory(prefix="codascore-host-") as folder:
            host = Path(folder) / "host.html"
            host.write_text(f"<!DOCTYPE html><html><body style='margin:0'>{frames}</body></html>", encoding="utf-8")
            measures += _run_script(host, _after_load(
                "Array.from(document.querySelectorAll('iframe')).map(function (frame) {"
                f" var document = frame.contentDocument; return (function () {{{MEASURE_SCRIPT}}})(); }})"),
                width + 40, "--allow-file-access-from-files")
    return measures


def measure_width(page: Path, width: int = IFRAME_WIDTH) -> dict:
    return measure_widths([page], width)[0]


def screenshot(page: Path, png: Path, width: int) -> None:
    """A full-page PNG: the window as tall as the page is at that width."""
    height = int(evaluate(page, "return document.documentElement.scrollHeight;", width))
    with tempfile.TemporaryDirectory(prefix="codascore-shot-") as folder:
        _headless(f"--window-size={width},{min(height, 30000)}", f"--screenshot={png.resolve()}",
                  page.resolve().as_uri(), profile=Path(folder) / "profile")
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {page}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="PNGs at 1400 px and 760 px of one scored page per task "
                                                 "(its first sample that scores).")
    parser.add_argument("--out", type=Path, default=Path("build/screenshots"))
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    args.out, args.root = args.out.resolve(), args.root.resolve()
    if not chromium():
        print(f"no {CHROMIUM} on PATH (apt-get install {CHROMIUM})", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    pages = args.out / "pages"
    # A results sample (no ingestion: quick) that is not meant to fail, first in name order.
    fewer_runs = generate_fewer_runs(args.out / "data")
    chosen: dict[str, Page] = {}
    for task in _task_names():
        data = fewer_runs if task in FEWER_RUNS else args.root
        for sample in _samples(data, task):
            if task in chosen or sample.name.startswith(("invalid", "broken", "code_")):
                continue
            page = score_sample(data, task, sample, pages / task / sample.name)
            if page.exit_code == 0:
                chosen[task] = page
    for task, page in chosen.items():
        for width in (1400, IFRAME_WIDTH):
            png = args.out / f"{task}-{page.sample}-{width}.png"
            screenshot(page.html, png, width)
            print(png)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
