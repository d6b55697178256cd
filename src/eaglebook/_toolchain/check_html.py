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
  widest elements that stick out of the viewport without such a box;
* **content wider than its column**: at that width, a block of the article column (``article.bd-article``)
  whose content a reader cannot see whole without scrolling: an element with ``overflow-x`` other than
  ``visible`` whose ``scrollWidth`` exceeds its ``clientWidth`` (a table in the theme's scrolling wrapper,
  a display equation in MathJax's scrolling container, an inline formula clipped by ``overflow: hidden``),
  or an element that extends past the column's left or right edge outside any such box (the outermost one
  is named).  Code is exempt: a code cell's source or printed text (``pre``, ``div.highlight``) may
  scroll inside its own box.  Each offender is reported with what it is (a table with its header, an
  equation with its number, an image, a block with its first words), its element, section and code cell,
  and its widths; 2 px of slack absorb sub-pixel rounding;
* **bare return value**: a code cell's output is a number or a container of numbers shown as a cell's
  value (myst-nb renders an ``execute_result`` or ``display_data`` whose best form is ``text/plain`` as
  ``.cell_output > .output.text_plain``, and printed text as ``.output.stream``): ``1.8e-14``, ``10.0``,
  ``np.float64(0.0033)``, ``(1.0, 2.5)``, ``array([...])`` (see :func:`bare_number`).  Printed numbers
  pass.  Hidden outputs (``hide-output``) count too; removed ones (``remove-output``) are not in the HTML.

* **no findings box**: a chapter page (``book/NN_*.html``, a regime page under ``book/_regimes/``) or the
  front page (``book/index.html``; the root ``index.html`` only redirects there) without a findings box (an admonition of class ``findings``, from
  ``:::{admonition} Findings`` with ``:class: findings``) before its first section heading;
* **visible bookkeeping**: a code cell shown to the reader (its input neither removed nor collapsed by
  ``remove-cell``, ``remove-input``, ``hide-cell``, ``hide-input``) whose every statement glues, declares,
  records, checks or notes provenance (:func:`eaglebook._toolchain.bookkeeping.only_bookkeeping`); and a
  visible parameters cell (it is collapsed: ``hide-cell``).

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
# A bare number as a cell's output: numbers (ints, floats, complex, nan, inf) with only brackets, commas and
# the wrappers numpy / torch / Python print around them: `1.8907248475522083e-14`, `np.float64(0.0033)`,
# `(1.0, 2.5)`, `array([1., 2.])`, `tensor(0.5, dtype=torch.float64)`, `Fraction(1, 3)`.
_NUMBER = re.compile(r"[-+]?(?:(?:\d[\d_]*\.?[\d_]*|\.\d+)(?:[eE][-+]?\d+)?j?|nan|inf)(?![\w.])", re.I)
_WRAPPER = re.compile(r"\b(?:(?:np|numpy|torch)\.\w+|array|tensor|Fraction|Decimal|float|int|complex)\(|"
                      r"\b(?:dtype|device|requires_grad)=[\w.'\"]+|'[-+]?(?:\d[\d.]*(?:e[-+]?\d+)?|nan|inf)'", re.I)


def bare_number(text: str) -> bool:
    """Whether a cell's text/plain output is only a number or a container of numbers (a bare return value)."""
    rest = _WRAPPER.sub(" ", text.strip())
    if not _NUMBER.search(rest):
        return False
    return not re.sub(r"[\s\[\](),.]+", "", _NUMBER.sub("", rest).replace("...", ""))


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
// ---- content wider than the article column --------------------------------------------------------------
const art = document.querySelector('article.bd-article') || document.querySelector('[role=main]') ||
            document.querySelector('main') || document.body;
const col = art.getBoundingClientRect();
const TOL = 2;                                   // px: sub-pixel rounding and italic overhangs are not clipping
const CODE = 'pre, div.highlight, .cell_input';  // code cells (source and text output) may scroll in their box
function name(e) {
  let s = e.tagName.toLowerCase() + (e.id ? '#' + e.id : '');
  const c = typeof e.className === 'string' ? e.className.trim().split(/\s+/).filter(x => x && !/^(docutils|notranslate|nohighlight|CtxtMenu_Attached_\d+)$/.test(x)) : [];
  return s + (c.length ? '.' + c.slice(0, 3).join('.') : '');
}
function what(e) {                               // what a reader would call it
  const t = e.matches('table') ? e : e.querySelector('table');
  if (t) {
    const head = [...(t.rows[0] ? t.rows[0].cells : [])].map(c => c.textContent.trim());
    return 'table (' + head.length + ' columns: ' + JSON.stringify(head.join(' | ').slice(0, 70)) + ')';
  }
  const m = e.closest('div.math, span.math') || e.querySelector('div.math, span.math, mjx-container');
  if (m || e.matches('mjx-container')) {
    const box = m || e, num = box.querySelector('.eqno');
    const disp = box.matches('div.math') || !!box.querySelector('mjx-container[display=true]') || box.getAttribute('display') === 'true';
    return (disp ? 'display equation' : 'equation') + (num ? ' ' + num.textContent.replace(/[^\w().-]/g, '') : '') +
           (box.id ? ' #' + box.id : '');
  }
  const img = e.matches('img') ? e : e.querySelector('img');
  if (img) return 'image ' + (img.getAttribute('src') || '').split('/').pop();
  return 'block ' + JSON.stringify(e.textContent.trim().replace(/\s+/g, ' ').slice(0, 50));
}
function where(e) {
  const sec = e.closest('section[id]'), cell = e.closest('div.cell');
  const cells = [...art.querySelectorAll('div.cell')];
  return (sec ? 'section #' + sec.id : 'top of the page') + (cell ? ', code cell ' + (cells.indexOf(cell) + 1) + ' of ' + cells.length : '');
}
function shown(e, r) {
  if (r.width <= 0 || r.height <= 0) return false;
  const s = getComputedStyle(e);
  return s.visibility !== 'hidden';
}
function code(e) {                              // a code block, or a box holding nothing but code blocks
  return !!e.closest(CODE) || (e.children.length > 0 && [...e.children].every(c => c.matches(CODE)));
}
function scrollBox(e) { return getComputedStyle(e).overflowX !== 'visible'; }
// MathJax's speech copy of each formula (mjx-assistive-mml) is an invisible, absolutely positioned box that
// widens its formula's scrollWidth: out of the layout while measuring
const hideMml = document.createElement('style');
hideMml.textContent = 'mjx-assistive-mml { display: none !important; }';
document.head.appendChild(hideMml);
const offenders = [], out = new Set();
const all = [...art.querySelectorAll('*')].filter(e =>
  !e.closest('mjx-assistive-mml, script, style, template') &&
  !(e.parentElement && e.parentElement.closest('mjx-container')));   // a formula's glyphs: its container speaks for them
for (const e of all) {
  const r = e.getBoundingClientRect();
  if (!shown(e, r)) continue;
  const s = getComputedStyle(e);
  if (s.overflowX !== 'visible' && e.scrollWidth - e.clientWidth > TOL && !code(e)) {
    offenders.push({what: what(e), el: name(e), where: where(e),
                    how: (s.overflowX === 'hidden' || s.overflowX === 'clip' ? 'clipped' : 'scrolls sideways') +
                         ': content ' + e.scrollWidth + ' px wide in a ' + e.clientWidth + '-px box (overflow-x: ' + s.overflowX + ')'});
    continue;
  }
  if (r.right > col.right + TOL || r.left < col.left - TOL) {
    let a = e.parentElement, boxed = false;
    for (; a && a !== art; a = a.parentElement) if (scrollBox(a)) { boxed = true; break; }
    if (!boxed) out.add(e);
  }
}
for (const e of out) {
  if (out.has(e.parentElement)) continue;        // report the outermost block that sticks out
  const r = e.getBoundingClientRect();
  offenders.push({what: what(e), el: name(e), where: where(e),
                  how: 'sticks out of the column: ' + Math.round(r.width) + ' px wide, x ' + Math.round(r.left) + '–' +
                       Math.round(r.right) + ' against the column\'s ' + Math.round(col.left) + '–' + Math.round(col.right)});
}
hideMml.remove();
// ---- bare return values: a code cell's text/plain output (myst-nb: .output.text_plain; printed text is .output.stream)
const bare = [...art.querySelectorAll('div.cell_output > .output.text_plain')].map(o => {
  const cell = o.closest('div.cell'), src = cell && cell.querySelector('.cell_input pre');
  return {text: (o.querySelector('pre') || o).textContent.trim(), where: where(o),
          source: src ? src.textContent.trim().split('\n').slice(-1)[0].slice(0, 80) : ''};
});
return {
  column: {left: Math.round(col.left), right: Math.round(col.right), el: name(art)},
  offenders: offenders, bare: bare,
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


FINDINGS_PAGE = re.compile(r"^(book/index|book/\d\d_[^/]+|book/_regimes/[^/]+)\.html$")
_CELL = re.compile(r'<div class="cell(?P<cls>[^"]*)"[^>]*>(?P<body>.*?)(?=<div class="cell[ "]|</section>|</article>|\Z)', re.S)
_SOURCE = re.compile(r'<div class="cell_input[^"]*"[^>]*>.*?<pre>(?P<src>.*?)</pre>', re.S)
_HIDDEN = ("tag_remove-cell", "tag_remove-input", "tag_hide-cell", "tag_hide-input")


def reading_problems(html_text: str, *, findings: bool) -> list[str]:
    """The page's findings box (where ``findings``: a chapter page or the front page, :data:`FINDINGS_PAGE`)
    and its visible cells (see the module docstring); checked on the HTML source."""
    import html as _html
    from .bookkeeping import only_bookkeeping
    out = []
    if findings:
        body = html_text.split('<article', 1)[-1]
        box = re.search(r'class="(?=[^"]*\bfindings\b)(?=[^"]*\badmonition\b)[^"]*"', body)
        h2 = re.search(r"<h2\b", body)
        if box is None:
            out.append("no findings box (:::{admonition} Findings / :class: findings) on this page")
        elif h2 is not None and h2.start() < box.start():
            out.append("the findings box comes after the first section heading: it belongs under the title")
    cells = list(_CELL.finditer(html_text))
    for i, m in enumerate(cells, 1):
        cls = m.group("cls")
        src = _SOURCE.search(m.group("body"))
        if src is None or any(t in cls for t in _HIDDEN):
            continue
        code = _html.unescape(re.sub(r"<[^>]+>", "", src.group("src")))
        if "tag_parameters" in cls:
            out.append(f"the parameters cell (code cell {i} of {len(cells)}) is visible: collapse it (tags: [parameters, hide-cell])")
        elif only_bookkeeping(code):
            first = code.strip().splitlines()[0][:70]
            out.append(f"visible bookkeeping cell (code cell {i} of {len(cells)}, {first!r}): only glue/record/check/"
                       "provenance; remove it from the HTML (remove-cell) or collapse it")
    return out


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
    rep.problems += reading_problems(page.read_text(encoding="utf-8", errors="replace"), findings=bool(FINDINGS_PAGE.match(rel)))
    links = broken_local_refs(page)
    if links:
        rep.problems.append(f"{len(links)} broken local link(s): {', '.join(links[:8])}")
    if r["traceback"]:
        rep.problems.append("a Python traceback / error output is on the page")
    col = r["column"]
    for o in r["offenders"]:
        rep.problems.append(f"wider than the article column ({col['el']}, x {col['left']}–{col['right']} px): "
                            f"{o['what']} [{o['el']}; {o['where']}] {o['how']}")
    for b in r["bare"]:
        if bare_number(b["text"]):
            rep.problems.append(f"bare return value under a code cell [{b['where']}; its last line "
                                f"{b['source']!r}]: {' '.join(b['text'].split())[:80]!r} (end the cell with ';' or "
                                "assign the value)")
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
