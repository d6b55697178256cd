"""A named set of knob changes to the set-up: one experiment that changes one thing.

Chapter 9's ablations (:data:`eaglebook.ablations.SKETCHED`, :data:`eaglebook.ablations.NOISE`) and chapter
11's changes (:data:`eaglebook.beyond.CHANGES`) are each a :class:`KnobSet`: a key, a label, what it
changes in words, and the knobs (:data:`eaglebook.config.KNOBS`: the same settings a chapter takes as
parameters) it sets.  :meth:`KnobSet.config` applies it to a base :class:`~eaglebook.config.TrainConfig`
(the cache key is the resulting config's hash, so a knob set shares cache entries with any other route to
the same config, ``python -m eaglebook.study`` included).

A knob's value is a literal, a :class:`Derived` value computed from the base config (twice its steps), or
:data:`PROBED`: a learning rate chosen by a probe and passed when the config is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from . import config, regimes
from .config import TrainConfig

__all__ = ["Derived", "PROBED", "KnobSet", "find"]


@dataclass(frozen=True)
class Derived:
    """A knob value computed from the config it changes (e.g. twice its steps); ``text`` says how."""
    text: str
    of: Callable[[TrainConfig], Any]

    def __repr__(self) -> str:
        return self.text


#: A knob value given when the config is built (``lr=``): chapter 11's SGD rate, chosen by a probe.
PROBED = "probed"


@dataclass(frozen=True)
class KnobSet:
    """One change to the set-up: a named set of knob overrides.

    ``key``: its name; ``label``: a short title; ``what``: what it changes (or asks), in words.
    ``knobs``: knob name (:data:`eaglebook.config.KNOBS`) → value, a :class:`Derived` value computed from
    the base config, or :data:`PROBED`.  ``departs``: the paper's statement this change contradicts, or
    ``""`` when it only fills a detail the paper leaves open (only a change that departs from nothing can
    become the book's default reading).  ``regime``: the regime whose configs it changes (None: any).
    ``claim``: its row in :mod:`eaglebook.claims`, where it is a question of its own (chapter 11).
    """
    key: str
    label: str
    what: str
    knobs: Mapping[str, Any] = field(default_factory=dict)
    departs: str = ""
    regime: str | None = None
    claim: str = ""

    def __post_init__(self):
        config.check_knobs(self.knobs)

    def settings(self, base: TrainConfig, lr: float | None = None) -> dict[str, Any]:
        """The knob overrides for ``base``, with derived values computed; ``lr``: the probed rate (needed
        for a knob set with a :data:`PROBED` value)."""
        out = {}
        for k, v in self.knobs.items():
            if isinstance(v, str) and v == PROBED:
                if lr is None:
                    raise ValueError(f"knob set {self.key!r} needs the probed learning rate: pass lr=beyond.probed_lr(...)")
                v = float(lr)
            out[k] = v.of(base) if isinstance(v, Derived) else v
        return out

    def config(self, base: TrainConfig, lr: float | None = None) -> TrainConfig:
        """``base`` (a config of the knob set's regime, when it names one) with its knobs applied."""
        if self.regime is not None and regimes.get(base.model.regime) is not regimes.get(self.regime):
            raise ValueError(f"argument base must be a {self.regime} config, got regime {base.model.regime!r}")
        return config.apply_knobs(base, self.settings(base, lr))


def find(sets: Iterable[KnobSet], key: str) -> KnobSet:
    """The knob set named ``key`` among ``sets``; an unknown key is a ``ValueError`` listing them."""
    sets = tuple(sets)
    for s in sets:
        if s.key == key:
            return s
    raise ValueError(f"argument key={key!r} is not valid; allowed values: {', '.join(s.key for s in sets)}")
