"""Open every page of the built book in headless Chromium and fail on what a reader would see broken.

    python -m eaglebook._toolchain.check_html [--html _build/html] [--screenshots _build/screenshots]

(``make check-html``.)  Each page is opened from disk (``file://``, as a reader opens
``_build/html/index.html``) with every host name unresolvable, so nothing can come from the network.
A page fails when

* **unrendered maths**: its visible text outside code blocks holds ``\\(``, ``\\)``, ``\\[``, ``$$`` or
  ``\\begin{``, or one of its maths elements (Sphinx's ``span.math`` / ``div.math``) holds no rendered
  ``mjx-container`` after MathJax has finished;
* **network**: it requested any http(s) URL (MathJax or a font from a CDN, ...);
* **broken image**: an ``<img>`` finished loading with ``naturalWidth == 0``;
* **broken local link**: an ``href``/``src`` (links, images, scripts, style sheets) names a local file that
  does not exist (checked on the HTML source; external URLs and same-page anchors are not checked);
* **traceback**: ``Traceback (most recent call last)`` or an error output (``.traceback``) is on the page;
* **page-level horizontal overflow**: at a 1280 x 900 CSS-pixel viewport (scroll bars hidden, so the
  viewport is 1280 px), ``document.documentElement.scrollWidth > document.documentElement.clientWidth``,
  i.e. the page itself scrolls sideways.  Content that scrolls inside its own box (a wide code cell or
  table with ``overflow-x: auto``) does not widen the document and so passes; the report names the
  widest elements that stick out of the viewport without such a box.

Besides, the whole tree (``.html``, ``.js``, ``.css``) must not name a CDN (jsdelivr, unpkg, cdnjs, ...).
A PNG per page (the full page, up to 12 000 px tall) goes to the screenshots folder.  Exit status: 0 all
pass, 1 some page failed (a report per page on stdout), 2 nothing to check (no built book, no browser).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from . import browser
from .mathjax_offline import CDN

SKIP_DIRS = {"_static", "_sources", "_images", "_downloads", "_sphinx_design_static", ".doctrees"}
SCANNED = {".html", ".js", ".css", ".mjs"}
RAW_MATH = re.compile(r"\\\(|\\\)|\\\[|\$\$|\\begin\{")
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class PageReport:
    page: str
    problems: list[str] = field(default_factory=list)
    screenshot: str = ""
    math: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def pages(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html") if not SKIP_DIRS & set(p.relative_to(root).parts[:-1]))


def cdn_references(root: Path) -> list[str]:
    """'file: url' for every CDN address in the built tree's .html/.js/.css files."""
    out = []
    for f in sorted(root.rglob("*")):
        if f.suffix in SCANNED and f.is_file():
            for m in sorted(set(CDN.findall(f.read_text(encoding="utf-8", errors="replace")))):
                out.append(f"{f.relative_to(root)}: {m}")
    return out


class _Refs(HTMLParser):
    ATTRS = {("a", "href"), ("img", "src"), ("script", "src"), ("link", "href"), ("source", "src"),
             ("iframe", "src"), ("video", "src"), ("audio", "src"), ("embed", "src"), ("object", "data")}

    def __init__(self):
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if (tag, k) in self.ATTRS and v:
                self.refs.append(v)


def broken_local_refs(page: Path) -> list[str]:
    """href/src values of ``page`` that name a local file which does not exist."""
    parser = _Refs()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    bad = []
    for ref in parser.refs:
        u = urlsplit(ref)
        if u.scheme not in ("", "file") or u.netloc or not u.path:
            continue                                     # external URL, or a same-page anchor
        target = Path(unquote(u.path)) if u.scheme == "file" else page.parent / unquote(u.path)
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            bad.append(ref)
    return sorted(set(bad))


# Runs in the page; returns what the checks above need.
PROBE = r"""
const SKIP = 'script,style,noscript,template,textarea,pre,code,.highlight,mjx-container,mjx-assistive-mml,.MathJax';
function visible(el) {
  for (let e = el; e; e = e.parentElement) {
    const s = getComputedStyle(e);
    if (s.display === 'none' || s.visibility === 'hidden') return false;
  }
  return true;
}
let prose = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const p = n.parentElement;
  if (!p || p.closest(SKIP) || !n.nodeValue.trim()) continue;
  if (visible(p)) prose.push(n.nodeValue);
}
const mathEls = [...document.querySelectorAll('span.math, div.math')];
const unrendered = mathEls.filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 80));
const imgs = [...document.images].map(i => ({src: i.getAttribute('src'), done: i.complete, w: i.naturalWidth}));
const clone = document.body.cloneNode(true);
clone.querySelectorAll('script,style').forEach(e => e.remove());
const de = document.documentElement, vw = de.clientWidth;
function clipped(e) {
  for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
    const o = getComputedStyle(a).overflowX;
    if (o !== 'visible') return true;
  }
  return false;
}
const wide = [...document.body.querySelectorAll('*')].map(e => [e, e.getBoundingClientRect()])
  .filter(([e, r]) => r.width > 0 && r.right > vw + 1 && !clipped(e))
  .sort((a, b) => b[1].right - a[1].right).slice(0, 5)
  .map(([e, r]) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
       (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : '') +
       ' (right edge ' + Math.round(r.right + window.scrollX) + ' px)');
return {
  prose: prose.join(' '),
  math: mathEls.length,
  mjx: document.querySelectorAll('mjx-container').length,
  unrendered: unrendered,
  images: imgs,
  traceback: clone.textContent.includes('Traceback (most recent call last)') ||
             document.querySelector('.traceback, .output.error') !== null,
  scrollWidth: de.scrollWidth, clientWidth: vw, innerWidth: window.innerWidth,
  wide: wide,
};
"""

WAIT_MATHJAX = """
const done = arguments[arguments.length - 1];
const t0 = Date.now(), hasMath = !!document.querySelector('span.math, div.math');
const script = [...document.scripts].some(s => /mathjax/i.test(s.src || ''));
if (!script) { done(hasMath ? 'the page has maths but loads no MathJax' : 'none'); return; }
(function poll() {
  const mj = window.MathJax;
  if (mj && mj.startup && mj.startup.promise) { mj.startup.promise.then(() => done('ok'), e => done('error: ' + e)); return; }
  if (Date.now() - t0 > 20000) { done('MathJax did not start within 20 s'); return; }
  setTimeout(poll, 100);
})();
"""


def snippet(text: str, m: re.Match, width: int = 40) -> str:
    return " ".join(text[max(0, m.start() - width): m.end() + width].split())


def check_page(drv, root: Path, page: Path, shots: Path) -> PageReport:
    rel = page.relative_to(root).as_posix()
    rep = PageReport(rel)
    browser.network_requests(drv)                           # drop the previous page's requests
    drv.get(page.resolve().as_uri())
    deadline = time.time() + 30
    while drv.execute_script("return document.readyState") != "complete" and time.time() < deadline:
        time.sleep(0.1)
    mj = drv.execute_async_script(WAIT_MATHJAX)
    if mj not in ("ok", "none"):
        rep.problems.append(f"maths: {mj}")
    drv.execute_script("document.querySelectorAll('img[loading=lazy]').forEach(i => i.loading = 'eager')")
    deadline = time.time() + 15
    while not drv.execute_script("return [...document.images].every(i => i.complete)") and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.2)                                         # let layout settle after typesetting
    r = drv.execute_script(PROBE)
    rep.math = r["math"]
    raw = list(RAW_MATH.finditer(r["prose"]))
    if raw:
        rep.problems.append(f"unrendered maths in the visible text ({len(raw)}x), e.g. "
                            f"…{snippet(r['prose'], raw[0])}…")
    if r["unrendered"]:
        rep.problems.append(f"{len(r['unrendered'])} of {r['math']} maths elements not rendered by MathJax "
                            f"(no mjx-container), e.g. {r['unrendered'][0]!r}")
    bad_imgs = [i["src"] for i in r["images"] if not i["done"] or i["w"] == 0]
    if bad_imgs:
        rep.problems.append(f"{len(bad_imgs)} broken image(s): {', '.join(bad_imgs[:5])}")
    links = broken_local_refs(page)
    if links:
        rep.problems.append(f"{len(links)} broken local link(s): {', '.join(links[:8])}")
    if r["traceback"]:
        rep.problems.append("a Python traceback / error output is on the page")
    if r["scrollWidth"] > r["clientWidth"]:
        rep.problems.append(f"page wider than the {r['clientWidth']} px viewport: scrollWidth {r['scrollWidth']} px"
                            + (f"; sticking out: {'; '.join(r['wide'])}" if r["wide"] else ""))
    net = sorted(set(browser.network_requests(drv)))
    if net:
        rep.problems.append(f"requested {len(net)} URL(s) from the network: {', '.join(net[:5])}")
    name = rel[:-len(".html")].replace("/", "__") + ".png"
    rep.screenshot = str(browser.screenshot(drv, shots / name))
    return rep


def check(root: Path, shots: Path, out=sys.stdout) -> int:
    if not (root / "index.html").is_file():
        print(f"check-html: no built book at {root} (no index.html): build it first with `make book` "
              "(quick: EAGLEBOOK_PROFILE=ci make book)", file=out)
        return 2
    if browser.find_chromium() is None:
        print(f"check-html: {browser.MISSING}", file=out)
        return 2
    failed = 0
    cdn = cdn_references(root)
    if cdn:
        failed += 1
        print(f"FAIL  CDN references in the built tree ({len(cdn)}):", file=out)
        for line in cdn[:20]:
            print(f"      {line}", file=out)
    todo = pages(root)
    t0 = time.time()
    with browser.chromium() as drv:
        for page in todo:
            rep = check_page(drv, root, page, shots)
            failed += not rep.ok
            print(f"{'ok  ' if rep.ok else 'FAIL'}  {rep.page}  (maths elements: {rep.math}; screenshot {rep.screenshot})",
                  file=out)
            for p in rep.problems:
                print(f"      - {p}", file=out)
            out.flush()
    print(f"checked {len(todo)} pages in {time.time() - t0:.0f} s; {'no' if not cdn else len(cdn)} CDN reference(s) "
          f"in {root}; screenshots in {shots}", file=out)
    print(f"check-html: {len(todo) + 1 - failed} passed, {failed} failed", file=out)   # pages + the CDN scan
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--html", type=Path, default=Path("_build/html"))
    ap.add_argument("--screenshots", type=Path, default=Path("_build/screenshots"))
    a = ap.parse_args(argv)
    return check(a.html, a.screenshots)


if __name__ == "__main__":
    sys.exit(main())
