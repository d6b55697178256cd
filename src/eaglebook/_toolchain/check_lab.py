"""Open a chapter in JupyterLab in headless Chromium, run it, and fail on raw MyST in rendered cells.

    python -m eaglebook._toolchain.check_lab [--chapter book/01_task.md] [--screenshots _build/screenshots]

(``make check-lab``.)  Starts ``jupyter lab`` from this environment on 127.0.0.1 (random token, free port,
``EAGLEBOOK_PROFILE=ci``), opens the chapter the way a double click does (the default viewer, which the
repository sets to jupytext's notebook), runs all cells, and fails when

* the chapter does not open as a notebook, or its kernel does not start;
* a cell raises (an error output), or not every code cell ran;
* a rendered Markdown cell still shows raw MyST: ``:::{``, ``{cite``, ``{glue``, ``{eval``, ``{numref``,
  ``{eq}`` or ``` ```{ ``` in its visible text;
* a glued number is not shown as a number: a ``{glue:text}`key``` role shows its key (jupyterlab-myst has no
  glue), or an ``{eval}`G("key", "fmt")``` expression (the prose's form, see ``glue_eval``) was not
  evaluated (it shows the expression), evaluated to an error (shown inline), or its value is not in the
  cell's visible text.

Screenshots, taken after the run: ``lab-<chapter>.png``, the top of the chapter down to the first Markdown
cell that quotes a glued number (the window is made tall enough: admonitions, citation and numbers in one
picture), and ``lab-<chapter>-glue.png`` (1280 x 1000, the Markdown cell that quotes the most glued numbers
at the top).  The server is always stopped.  Exit status 0 / 1 (failed) / 2 (no Chromium).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import browser, lab_server

RAW_MYST = (":::{", "{cite", "{glue", "{eval", "{numref", "{eq}", "```{", "{ref}")
GLUE = re.compile(r"\{glue(?::\w+)?\}`([^`]+)`")   # {glue:text}`key:.2e` -> key:.2e
EVAL = re.compile(r"\{eval\}`([^`]+)`")              # {eval}`G("key", ".2e")` -> G("key", ".2e")
QUOTED = re.compile(r"^([\"'])(.*)\1$", re.S)        # jupyterlab-myst strips one pair of quotes from text/plain
REPO = Path.cwd()

# JupyterLab is started with --LabApp.expose_app_in_browser, so window.jupyterapp is the application.
# The chapter's widget: the shell's current widget, or (when headless Chromium gives the page no focus, so
# that currentWidget stays null) the visible document in the main area.
CURRENT = ("(function (app) { if (!app || !app.shell) return null; const c = app.shell.currentWidget;"
           " if (c && c.context) return c; const ws = Array.from(app.shell.widgets('main')).filter(x => x.context);"
           " return ws.find(x => x.isVisible) || ws[ws.length - 1] || c || null; })(window.jupyterapp)")
STATE = r"""
const app = window.jupyterapp; if (!app || !app.shell) return {ready: false};
const w = __CUR__;
if (!w || !w.context) return {ready: true, widget: w ? w.constructor.name : null};
const nb = w.content && w.content.widgets ? w.content : null;
const kernel = w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
return {
  ready: true, path: w.context.path, notebook: !!nb && w.hasClass('jp-NotebookPanel'),
  factory: w.context && app.docRegistry ? (w.title.label) : null,
  kernel: kernel ? kernel.status : null,
  cells: nb ? nb.widgets.length : 0,
  code: nb ? nb.widgets.filter(c => c.model.type === 'code').length : 0,
  ran: nb ? nb.widgets.filter(c => c.model.type === 'code' && c.model.executionCount !== null).length : 0,
};
"""

MARKDOWN = r"""
const w = __CUR__, out = [];
w.content.widgets.forEach((c, i) => {
  if (c.model.type !== 'markdown') return;
  const node = c.node.querySelector('.jp-MarkdownOutput') || c.node.querySelector('.jp-Cell-inputWrapper');
  out.push({index: i, rendered: c.rendered, source: c.model.sharedModel.getSource(),
            text: node ? node.innerText || node.textContent : '',
            // jupyterlab-myst's results of the cell's {eval} expressions: [{expression, result}]
            expressions: c.model.sharedModel.getMetadata('user_expressions') || []});
});
return out;
"""

ERRORS = r"""
const w = __CUR__, out = [];
w.content.widgets.forEach((c, i) => {
  if (c.model.type !== 'code') return;
  const o = c.model.outputs.toJSON();
  o.filter(x => x.output_type === 'error').forEach(x => out.push(`cell ${i}: ${x.ename}: ${x.evalue}`));
});
return out;
"""


def shown_text(result: dict) -> str | None:
    """What jupyterlab-myst shows for an ``{eval}`` result: its ``text/plain`` without one pair of quotes
    (None for an error or a result without text)."""
    if not isinstance(result, dict) or result.get("status") != "ok":
        return None
    text = (result.get("data") or {}).get("text/plain")
    return None if text is None else QUOTED.sub(r"\2", text)


def markdown_problems(cells: list[dict]) -> tuple[list[str], list[str]]:
    """From the Markdown cells read in the page (index, rendered, source, text, expressions): the problems
    (raw MyST in the visible text, a cell left unrendered, an ``{eval}`` expression with no value or an
    error) and the glued values that do not show as their value: a ``{glue}`` key, or an ``{eval}``
    expression, shown as itself."""
    problems, unglued = [], []
    for c in cells:
        if not c["rendered"]:
            problems.append(f"markdown cell {c['index']} is not rendered")
        raw = [m for m in RAW_MYST if m in c["text"]]
        if raw:
            i = min(c["text"].find(m) for m in raw)
            problems.append(f"markdown cell {c['index']} shows raw MyST {raw}: "
                            f"…{' '.join(c['text'][max(0, i - 40):i + 60].split())}…")
        unglued += [k for k in GLUE.findall(c["source"]) if k in c["text"]]
        results = {e.get("expression"): e.get("result") for e in c.get("expressions") or [] if isinstance(e, dict)}
        for expr in EVAL.findall(c["source"]):
            if expr in c["text"] or expr not in results:
                unglued.append(expr)                       # jupyterlab-myst shows an unevaluated expression
                continue
            shown = shown_text(results[expr])
            if shown is None:
                r = results[expr] or {}
                problems.append(f"markdown cell {c['index']}: {{eval}}`{expr}` gives "
                                f"{r.get('ename', 'no text')}: {r.get('evalue', r.get('data'))}")
            elif shown not in c["text"]:
                problems.append(f"markdown cell {c['index']}: {{eval}}`{expr}` = {shown!r} is not in its visible text")
    return problems, unglued


# [index, count] of the Markdown cells that quote glued values ({eval} or {glue}); scroll a cell to the top
GLUED_CELLS = r"""
const w = __CUR__;
if (!w || !w.content || !w.content.widgets) return [];
return w.content.widgets.map((c, i) => [i, c.model.type === 'markdown' ?
  (c.model.sharedModel.getSource().match(/\{(eval|glue[:\w]*)\}`/g) || []).length : 0]).filter(x => x[1] > 0);
"""
SCROLL_TO = r"""
const w = __CUR__, c = w.content.widgets[arguments[0]];
w.content.activeCellIndex = arguments[0]; c.node.scrollIntoView({block: 'start'});
return c.node.getBoundingClientRect().top;
"""
HAS_CELLS = r"""const w = __CUR__;
return !!(w && w.content && w.content.widgets && w.content.widgets.length);"""
BOTTOM_OF = r"""return __CUR__.content.widgets[arguments[0]].node.getBoundingClientRect().bottom;"""
STATE, MARKDOWN, ERRORS, GLUED_CELLS, SCROLL_TO, HAS_CELLS, BOTTOM_OF = (
    js.replace("__CUR__", CURRENT) for js in (STATE, MARKDOWN, ERRORS, GLUED_CELLS, SCROLL_TO, HAS_CELLS, BOTTOM_OF))


def screenshots(drv, shots: Path, name: str, width: int = 1280, height: int = 1000, tallest: int = 4000) -> None:
    """``lab-<name>.png``: the chapter from its first cell down to the first Markdown cell that quotes a glued
    value (the viewport is made as tall as that needs, at most ``tallest`` px), and ``lab-<name>-glue.png``:
    the Markdown cell that quotes the most glued values at the top of a ``width`` x ``height`` screen."""
    try:
        glued = drv.execute_script(GLUED_CELLS)
        top = drv.execute_script(SCROLL_TO, 0) if drv.execute_script(HAS_CELLS) else None
    except Exception:  # noqa: BLE001 - JupyterLab did not get that far: a screenshot of what there is
        glued, top = [], None
    if not glued or top is None:
        time.sleep(0.5)
        browser.screenshot(drv, shots / f"lab-{name}.png", full_page=False)
        return
    need = int(drv.execute_script(BOTTOM_OF, glued[0][0])) + 60      # + JupyterLab's status bar
    tall = max(height, min(need, tallest))
    metrics = {"width": width, "deviceScaleFactor": 1, "mobile": False}
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": tall})
    try:
        time.sleep(1)
        drv.execute_script(SCROLL_TO, 0)
        time.sleep(0.5)
        browser.screenshot(drv, shots / f"lab-{name}.png", full_page=False)
    finally:
        drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": height})
    time.sleep(1)
    drv.execute_script(SCROLL_TO, max(glued, key=lambda x: x[1])[0])
    time.sleep(0.5)
    browser.screenshot(drv, shots / f"lab-{name}-glue.png", full_page=False)


def wait(drv, cond, timeout: float, what: str, poll: float = 0.5):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = drv.execute_script(STATE)
        if cond(last):
            return last
        time.sleep(poll)
    raise TimeoutError(f"{what} (after {timeout:.0f} s; state {last})")


def check_lab(chapter: str, shots: Path, root: Path = REPO, out=sys.stdout) -> int:
    if browser.find_chromium() is None:
        print(f"check-lab: {browser.MISSING}", file=out)
        return 2
    name = Path(chapter).stem
    problems: list[str] = []
    unglued: list[str] = []       # glued numbers that JupyterLab shows as their key or expression
    t0 = time.time()
    settings = Path(tempfile.mkdtemp(prefix="eaglebook-lab-settings-"))
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True, exist_ok=True)
    # render every cell (no virtual scrolling), so that every Markdown cell is in the page to be read
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        '{"windowingMode": "none"}\n')
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True, exist_ok=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}\n')   # no news pop-up over the screenshot
    with lab_server.jupyter(root, env={"EAGLEBOOK_PROFILE": "ci"},
                            extra=["--LabApp.expose_app_in_browser=True",
                                   f"--LabApp.user_settings_dir={settings}"]) as srv, \
            browser.chromium(height=1000, allow_local_server=True) as drv:
        try:
            drv.get(f"{srv.url}/lab/tree/{chapter}?token={srv.token}")
            st = wait(drv, lambda s: s.get("path") == chapter, 90, f"JupyterLab did not open {chapter}")
            if not st["notebook"]:
                problems.append(f"{chapter} did not open as a notebook (opened in {st})")
                raise StopIteration
            st = wait(drv, lambda s: s["kernel"] == "idle", 120, "the kernel did not start")
            drv.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells');")
            st = wait(drv, lambda s: s["ran"] == s["code"] and s["kernel"] == "idle", 300,
                      "Run All did not finish", poll=1)
            time.sleep(1)
            for e in drv.execute_script(ERRORS):
                problems.append(f"error output: {e[:300]}")
            cells = drv.execute_script(MARKDOWN)
            found, unglued = markdown_problems(cells)
            problems += found
            n_glued = sum(len(GLUE.findall(c["source"])) + len(EVAL.findall(c["source"])) for c in cells)
            print(f"{chapter}: {st['cells']} cells, {st['code']} code cells run, {len(cells)} markdown cells "
                  f"read, {n_glued - len(unglued)} of {n_glued} glued values shown, {time.time() - t0:.0f} s",
                  file=out)
        except StopIteration:
            pass
        except Exception as exc:  # noqa: BLE001 - report, with the server's log
            problems.append(f"{type(exc).__name__}: {exc}\n--- server log ---\n{srv.tail(2000)}")
        finally:
            screenshots(drv, shots, name)
    shutil.rmtree(settings, ignore_errors=True)
    if unglued:
        problems.append(f"{len(unglued)} glued value(s) show their key or expression instead of the value "
                        f"(jupyterlab-myst has no {{glue}}; an {{eval}} needs its Markdown cell run after the "
                        f"cell that glues): {', '.join(unglued[:4])}{', …' if len(unglued) > 4 else ''}")
    for p in problems:
        print(f"FAIL  {p}", file=out)
    print(f"check-lab: {chapter} {'ok' if not problems else 'FAILED'}; screenshots in {shots}/lab-{name}*.png",
          file=out)
    return 1 if problems else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapter", default="book/01_task.md")
    ap.add_argument("--screenshots", type=Path, default=Path("_build/screenshots"))
    a = ap.parse_args(argv)
    return check_lab(a.chapter, a.screenshots.resolve())


if __name__ == "__main__":
    sys.exit(main())
