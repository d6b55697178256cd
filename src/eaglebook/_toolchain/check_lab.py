"""Open a chapter in JupyterLab in headless Chromium, run it, and fail on raw MyST in rendered cells.

    python -m eaglebook._toolchain.check_lab [--chapter book/01_task.md] [--screenshots _build/screenshots]

(``make check-lab``.)  Starts ``jupyter lab`` from this environment on 127.0.0.1 (random token, free port,
``EAGLEBOOK_PROFILE=ci``), opens the chapter the way a double click does (the default viewer, which the
repository sets to jupytext's notebook), runs all cells, and fails when

* the chapter does not open as a notebook, or its kernel does not start;
* a cell raises (an error output), or not every code cell ran;
* a rendered Markdown cell still shows raw MyST: ``:::{``, ``{cite``, ``{glue``, ``{numref``, ``{eq}`` or
  ``` ```{ ``` in its visible text.

Screenshots: ``lab-<chapter>.png`` (the first screen) and ``lab-<chapter>-glue.png`` (the first Markdown
cell that quotes a glued number).  The server is always stopped.  Exit status 0 / 1 (failed) / 2 (no
Chromium).
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

RAW_MYST = (":::{", "{cite", "{glue", "{numref", "{eq}", "```{", "{ref}")
GLUE = re.compile(r"\{glue(?::\w+)?\}`([^`]+)`")   # {glue:text}`key:.2e` -> key:.2e
REPO = Path.cwd()

# JupyterLab is started with --LabApp.expose_app_in_browser, so window.jupyterapp is the application.
STATE = r"""
const app = window.jupyterapp; if (!app || !app.shell) return {ready: false};
const w = app.shell.currentWidget;
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
const w = window.jupyterapp.shell.currentWidget, out = [];
w.content.widgets.forEach((c, i) => {
  if (c.model.type !== 'markdown') return;
  const node = c.node.querySelector('.jp-MarkdownOutput') || c.node.querySelector('.jp-Cell-inputWrapper');
  out.push({index: i, rendered: c.rendered, source: c.model.sharedModel.getSource(),
            text: node ? node.innerText || node.textContent : ''});
});
return out;
"""

ERRORS = r"""
const w = window.jupyterapp.shell.currentWidget, out = [];
w.content.widgets.forEach((c, i) => {
  if (c.model.type !== 'code') return;
  const o = c.model.outputs.toJSON();
  o.filter(x => x.output_type === 'error').forEach(x => out.push(`cell ${i}: ${x.ename}: ${x.evalue}`));
});
return out;
"""


def markdown_problems(cells: list[dict]) -> tuple[list[str], list[str]]:
    """From the Markdown cells read in the page (index, rendered, source, text): the problems (raw MyST in
    the visible text, a cell left unrendered) and the glued values shown as their key instead of a number."""
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
    return problems, unglued


def wait(drv, cond, timeout: float, what: str, poll: float = 0.5):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = drv.execute_script(STATE)
        if cond(last):
            return last
        time.sleep(poll)
    raise TimeoutError(f"{what} (after {timeout:.0f} s; state {last})")


def check_lab(chapter: str, shots: Path, root: Path = REPO, out=sys.stdout, strict_glue: bool = False) -> int:
    if browser.find_chromium() is None:
        print(f"check-lab: {browser.MISSING}", file=out)
        return 2
    name = Path(chapter).stem
    problems: list[str] = []
    unglued: list[str] = []       # glued numbers that JupyterLab shows as their key (jupyterlab-myst has no glue)
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
            print(f"{chapter}: {st['cells']} cells, {st['code']} code cells run, "
                  f"{len(cells)} markdown cells read, {time.time() - t0:.0f} s", file=out)
        except StopIteration:
            pass
        except Exception as exc:  # noqa: BLE001 - report, with the server's log
            problems.append(f"{type(exc).__name__}: {exc}\n--- server log ---\n{srv.tail(2000)}")
        finally:
            drv.execute_script(r"""
              const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
              if (w && w.content && w.content.widgets && w.content.widgets.length) {
                w.content.activeCellIndex = 0; w.content.widgets[0].node.scrollIntoView({block: 'start'}); }""")
            time.sleep(0.5)
            browser.screenshot(drv, shots / f"lab-{name}.png", full_page=False)
            glue = drv.execute_script(r"""
              const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
              if (!w || !w.content || !w.content.widgets) return -1;
              const i = w.content.widgets.findIndex(c => c.model.type === 'markdown' &&
                                                         c.model.sharedModel.getSource().includes('{glue'));
              if (i >= 0) w.content.widgets[i].node.scrollIntoView({block: 'start'});
              return i;""")
            if glue >= 0:
                time.sleep(0.5)
                browser.screenshot(drv, shots / f"lab-{name}-glue.png", full_page=False)
    shutil.rmtree(settings, ignore_errors=True)
    if unglued:
        msg = (f"{len(unglued)} glued value(s) show their key instead of the number "
               f"(jupyterlab-myst does not implement glue), e.g. {', '.join(unglued[:4])}")
        if strict_glue:
            problems.append(msg)
        else:
            print(f"NOTE  {msg}", file=out)
    for p in problems:
        print(f"FAIL  {p}", file=out)
    print(f"check-lab: {chapter} {'ok' if not problems else 'FAILED'}; screenshots in {shots}/lab-{name}*.png",
          file=out)
    return 1 if problems else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapter", default="book/01_task.md")
    ap.add_argument("--screenshots", type=Path, default=Path("_build/screenshots"))
    ap.add_argument("--strict-glue", action="store_true", help="fail when a glued number shows as its key")
    a = ap.parse_args(argv)
    return check_lab(a.chapter, a.screenshots.resolve(), strict_glue=a.strict_glue)


if __name__ == "__main__":
    sys.exit(main())
