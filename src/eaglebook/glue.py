"""Glue: the numbers a chapter computes, as its prose quotes them.

Every value is glued (``myst_nb.glue``) as a plain ``float`` (numbers) or a string under its key, so the prose
quotes it with ``{eval}`\\`G("key", ".2e")\\``` (or myst-nb's ``{glue:text}`\\`key:.2e\\```).  :func:`G` is
that expression's kernel side (JupyterLab evaluates it in the chapter's kernel);
``eaglebook._toolchain.glue_eval`` is its book side, which renders the same role from the glue data of the
executed notebook.  The one piece of state is the kernel's record of what it glued (``_GLUED``), which
:func:`G` reads.
"""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["glue", "G", "Glued", "GlueKeyError", "and_list"]

_GLUED: dict[str, Any] = {}        # what glue() stored in this process (the kernel), for G()


def glue(key: str, value: Any) -> None:
    """Glue ``value`` for the prose (plain floats for numbers); outside the book toolchain only :func:`G`
    sees it."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = float(value)
    _GLUED[key] = value
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # the package works without the book toolchain
        return
    _myst_glue(key, value, display=False)


class GlueKeyError(LookupError):
    """``G(key)`` for a key that no cell of this kernel has glued (yet)."""


class Glued(str):
    """A glued value as the prose shows it: a ``str`` whose ``repr`` is itself, without quotes, so that an
    ``{eval}`` expression shows ``10`` and not ``'10'`` (its only display form is ``text/plain``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def G(key: str, fmt: str = "s") -> Glued:  # noqa: N802 - short on purpose: it is written in the prose
    """The value glued under ``key``, formatted as the book formats it; the kernel side of the prose's
    ``{eval}`\\`G("key", ".2e")\\```.

    JupyterLab (jupyterlab-myst) evaluates the expression in the chapter's kernel and shows the result; the
    book renders the same role from the glue data of the executed notebook (``eaglebook._toolchain.
    glue_eval``), exactly as ``{glue:text}`\\`key:fmt\\```.  Both go through the same steps: the value's
    ``text/plain`` form (IPython's display formatter, as ``myst_nb.glue`` stores it), then myst-nb's
    ``format_plain_text`` with ``fmt`` (default ``"s"``, as ``{glue:text}`` without a format)."""
    if not isinstance(key, str) or not isinstance(fmt, str):
        raise TypeError(f"G(key, fmt) takes two strings, got G({key!r}, {fmt!r})")
    if key not in _GLUED:
        known = ", ".join(sorted(_GLUED)[:8]) + (", …" if len(_GLUED) > 8 else "")
        raise GlueKeyError(f"nothing glued under {key!r} in this kernel yet: run the cell that glues it"
                           f" (glued so far: {known or 'nothing'})")
    try:
        from IPython.core.formatters import format_display_data
        from myst_nb.core.variables import format_plain_text
    except ImportError as exc:  # pragma: no cover - the book toolchain is in requirements.txt
        raise RuntimeError("G() formats as the book does and needs myst-nb: pip install -r requirements.txt") from exc
    text = format_display_data(_GLUED[key])[0]["text/plain"]
    try:
        return Glued(format_plain_text(text, fmt))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"G({key!r}, {fmt!r}): cannot format {text} with {fmt!r}: {exc}") from None


def and_list(items) -> str:
    """Items joined for a glued sentence: '' (none), 'a', 'a and b', 'a, b and c'."""
    items = [str(x) for x in items]
    return "" if not items else items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
