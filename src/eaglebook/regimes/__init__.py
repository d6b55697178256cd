"""The compute regimes (the paper's §3 and App. B.4) as objects, and their registry.

A regime says what the weights of the linear transformer may do.  Everything that differs from one
regime to the next lives in its object, and nowhere else; the rest of the package asks the regime
(``regimes.get(name)``) instead of comparing its name.  A :class:`Regime` is a name and three parts:

* ``attention`` (:mod:`eaglebook.regimes.attention`): how its tokens attend: the parameter **layout**, the
  model's **embedding, layer and read-out**, and the **hand-set diagonal weights** of one layer, used by
  :class:`eaglebook.models.LinearTransformer`; also which settings of the model it reads (``uses``);
* ``reading`` (:mod:`eaglebook.regimes.reading`): how its weights are read: extraction's **products**,
  the **scalars** α¹, α², α³, the **norms** that set a layer's scale, and the per-layer **iteration** read
  out of the weights (chapter 5);
* ``paper`` (:mod:`eaglebook.regimes.paper`): what the paper says about it (its **facts**, its own
  **comparison** of chapter 4), its label and **plot style**.

Adding a regime is one file: build its parts (reusing the paper regimes' where they fit) and
:func:`register` it; ``eaglebook.regimes.toy`` is an example, which the ``ci`` profile registers to test
that a regime needs nothing else (every page of chapter 4, its row of the table of contents and its chapter
tests come from the registry).  The registry holds the paper's three regimes (:data:`PAPER`, in the
paper's order); :func:`get` looks one up and names the registered ones when the name is unknown.  The paper's
other names, ``centralized`` and ``compute-limited``, are aliases.

The package depends only on the array layer and the solver's UPDATE, so that the
configuration (``eaglebook.config``) can validate a regime's settings and the model, the extraction and the
chapters can all use the same objects.  The parts' methods take the model (or products, tensors) as
arguments and keep no state of their own.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from .attention import Heads, Layout, Machines, Sketch
from .paper import DistributedPaper, Paper, PaperComparison, SketchedPaper
from .reading import Diagonal, Projector, SelfOther, top_projector

__all__ = ["Regime", "Layout", "Heads", "Sketch", "Machines", "Diagonal", "Projector", "SelfOther", "Paper",
           "PaperComparison", "SketchedPaper", "DistributedPaper", "UNCONSTRAINED", "DISTRIBUTED", "SKETCHED", "PAPER",
           "CAPABILITIES", "register", "unregister", "get", "names", "canonical", "in_paper", "top_projector"]

#: What a function may ask of a regime (:meth:`Regime.can`), and the part that answers.
CAPABILITIES = {"refactorable": "attention", "prunable": "attention", "heads_share_weights": "attention",
                "sketched": "reading"}


@dataclass(frozen=True, eq=False)
class Regime:
    """A compute regime: its registry ``name`` (and the paper's other names, ``aliases``) and its three
    parts; see the module docstring."""

    name: str
    attention: Heads
    reading: Diagonal
    paper: Paper
    aliases: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"<regime {self.name}>"

    @property
    def label(self) -> str:
        """Short description for prose and tables."""
        return self.paper.label

    @property
    def style(self) -> dict:
        """Plot style (matplotlib line keywords)."""
        return self.paper.style

    @property
    def uses(self) -> frozenset[str]:
        """The ModelConfig fields this regime reads besides ``layers`` and ``init_std`` (other fields keep
        their defaults in its configs, so that a setting it does not read does not change its cache key)."""
        return self.attention.uses

    def can(self, need: str) -> bool:
        """Whether the regime has the capability ``need`` (a key of :data:`CAPABILITIES`): products that can be
        written back as weights, independent heads that can be pruned, one block shared by every head, data
        blocks read as rank-r sketch projectors."""
        return bool(getattr(getattr(self, CAPABILITIES[need]), need))


UNCONSTRAINED = Regime(
    "unconstrained", Heads(), Diagonal(), aliases=("centralized",),
    paper=Paper("unconstrained", style=dict(color="#0072B2", linestyle="-"), quantized=True, scaling_law=True,
                no_claim="The paper makes no claim about this regime's weights beyond the common structure (its "
                         "claim about heads is tested in chapter 3).",
                own="One head per layer: this chapter reads a one-head model trained from scratch; the paper prunes its "
                    "8-head model to one head (chapter 3 does so and fine-tunes it), and step 3 reads that model too, "
                    "as evidence.",
                own_print="one head; the 8-head model and its pruning to one head are in chapter 3"))

DISTRIBUTED = Regime(
    "distributed", Machines(), SelfOther(),
    paper=DistributedPaper(
        "distributed", style=dict(color="#E69F00", linestyle="--"), variant="distributed", quantized=True,
        vp_label="$W_{VP}$ self | other", norm_label="‖A^μ_ℓ‖²", norm_note="over the prompts and the machines' blocks A^μ_ℓ",
        special=PaperComparison(
            "C4_distributed_cross_query", "share of the cross-machine projection in the C, D (query) block",
            ("at_least", (0.9,), {"partly": 0.7}), "a share of a weight norm, in [0, 1], averaged over layers",
            claim="cross-machine", paper_text="≈ 1 (only C, D cross)", short="only the C, D columns cross machines")))

SKETCHED = Regime(
    "sketched", Sketch(), Projector(), aliases=("compute-limited",),
    paper=SketchedPaper(
        "sketched", style=dict(color="#009E73", linestyle="-."), variant="sketched",
        beats_zero_tolerance="beats_zero_sketched", norm_label="‖A_ℓS_ℓ‖²",
        norm_note="the sketched data's norm, with the layer's sketch S_ℓ",
        special=PaperComparison(
            "C4_sketched_rel_diff", "relative difference of the normalised W_QK and ±W_VP data blocks (seed 0, median "
            "over layers)", ("within_factor", (2,), {"partly": 4}), "a property of the weights, median over layers",
            claim="sketch-rel-diff", paper=0.28, short="W_VP's data block has W_QK's sketch (relative difference 0.28)"),
        reading="α¹ and α² as the least-squares scale of their data block against the layer's projector "
                "P_ℓ = S_ℓS_ℓᵀ, the top-r subspace of W_QK's data block (α¹ = tr(W_QK P_ℓ)/r, likewise α²; that block "
                "has rank r by construction), and α³ as the mean diagonal of W_VP's query block",
        update_note=" (with the sketch, AAᵀ becomes A P_ℓ Aᵀ)"))


# ------------------------------------------------------------------------------------------- registry
_REGISTRY: dict[str, Regime] = {}
_ALIASES: dict[str, str] = {}


def register(regime: Regime, *, replace: bool = False) -> Regime:
    """Add ``regime`` to the registry under its ``name``; returns it.  A name (or alias) already taken is an
    error unless ``replace``."""
    r = regime
    if not isinstance(r, Regime) or not isinstance(r.name, str) or not r.name:
        raise ValueError(f"argument regime={regime!r} must be a Regime with a name")
    for k in (r.name, *r.aliases):
        taken = _REGISTRY.get(k) or (_REGISTRY.get(_ALIASES[k]) if k in _ALIASES else None)
        if taken is not None and taken.name != r.name and not replace:
            raise ValueError(f"regime name {k!r} is already registered ({taken!r})")
    if r.name in _REGISTRY and not replace:
        raise ValueError(f"regime {r.name!r} is already registered")
    _REGISTRY[r.name] = r
    _ALIASES.update({a: r.name for a in r.aliases})
    return r


def unregister(name: str) -> None:
    """Remove a regime registered with :func:`register` (the paper's three cannot be removed)."""
    if name in PAPER:
        raise ValueError(f"regime {name!r} is one of the paper's and cannot be unregistered")
    r = _REGISTRY.pop(name, None)
    if r is not None:
        for a in r.aliases:
            _ALIASES.pop(a, None)


def names() -> tuple[str, ...]:
    """Every registered regime's name (the paper's first, in the paper's order)."""
    return tuple(_REGISTRY)


def canonical(name: Any, argument: str = "regime") -> str:
    """The registered name for ``name`` (an alias resolves); else a ``ValueError`` listing the registered
    regimes (and their aliases)."""
    if isinstance(name, str):
        if name in _REGISTRY:
            return name
        if name in _ALIASES:
            return _ALIASES[name]
    known = [*_REGISTRY, *_ALIASES]
    close = difflib.get_close_matches(name, known, n=1) if isinstance(name, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    aliases = f"; aliases {', '.join(repr(a) for a in _ALIASES)}" if _ALIASES else ""
    raise ValueError(f"parameter {argument}={name!r} is not valid; allowed values: {', '.join(repr(k) for k in _REGISTRY)} "
                     f"(the registered regimes{aliases}){hint}")


def in_paper(name: Any) -> bool:
    """Whether ``name`` (or alias) is one of the paper's regimes (:data:`PAPER`)."""
    return canonical(name) in PAPER


def get(name: Any) -> Regime:
    """The registered regime ``name`` (or alias); a ``ValueError`` listing the registered ones otherwise.
    A :class:`Regime` instance is returned as is."""
    if isinstance(name, Regime):
        return name
    return _REGISTRY[canonical(name)]


for _rg in (UNCONSTRAINED, DISTRIBUTED, SKETCHED):
    register(_rg)
#: The paper's three regimes, in the paper's order (what the chapters iterate over).
PAPER: tuple[str, ...] = names()
del _rg


def among(name: Any, names) -> bool:
    """Whether the regime ``name`` is one of ``names`` (aliases resolved): the one place a filter by regime name
    (e.g. a comparison row declared for some regimes only, :class:`eaglebook.comparisons.Row`) compares names."""
    return canonical(name) in {canonical(n) for n in names}
