"""Profiles and configurations: frozen dataclasses, validated on construction.

A *profile* names a whole experimental budget: ``paper`` follows the paper's recipe
(the paper's App. B.2), ``ci`` is small and quick so that the test suite can execute every chapter.
Chapters take ``profile = None`` as a papermill parameter; :func:`resolve_profile` then reads the
``EAGLEBOOK_PROFILE`` environment variable and falls back to ``paper``.  An explicit value wins.

**Knobs.**  Every setting of the set-up that a reader may want to change (:data:`KNOBS`: the task's n, d,
n', d', rank s, decay α, noise σ² and its share of the samples, and a full-rank floor; the model's layers,
heads, r, W_V/W_P width, machines M, initialisation and attention (linear or softmax); training steps, batch,
learning rate, clipping, optimiser and momentum; the profile's seeds) is a chapter
parameter (``papermill book/04_extract.md out.ipynb -p regime sketched -p r 8``).  :func:`get` applies
them to a profile (``knobs={"r": 8}``), checks each value (an error names the knob and its allowed
range) and records the changed ones in :attr:`Profile.knobs`; they flow into every training config, and
so into its cache key.  A knob that a regime does not read (``r`` for the unconstrained regime) keeps the
paper's value in that regime's configs (:meth:`Profile.training`), so its cache key does not change.

**Hash-neutral fields.**  A config field added later is declared with :func:`neutral`: its default is
left out of the config's canonical JSON (``eaglebook.cache``), so every config that leaves it at the
default keeps the hash it had before the field existed (the shipped models keep their cache keys).

Everything here is a pure value: no module-level mutable state, no RNG (the regime registry lives in
:mod:`eaglebook.regimes`; a profile registers the regimes it shows beyond the paper's, :attr:`Profile.regimes`).
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from . import regimes

PROFILE_ENV = "EAGLEBOOK_PROFILE"
PROFILES = ("paper", "ci")

#: The paper's three regimes, in the paper's order (the registry: :mod:`eaglebook.regimes`).
REGIMES = regimes.PAPER

#: The attention of the model's layers (``ModelConfig.attention``) and the optimisers of the recipe
#: (``TrainConfig.optimizer``).
ATTENTIONS = ("linear", "softmax")
OPTIMIZERS = ("adam", "sgd")

#: The metadata key of a hash-neutral field (see :func:`neutral`; read by ``eaglebook.cache``).
HASH_NEUTRAL = "eaglebook.hash_neutral"


def neutral(default: Any):
    """A dataclass field whose ``default`` is left out of the config's canonical JSON and hash, so that
    adding the field changes the cache key of no config that leaves it at the default.  For immutable
    defaults (numbers, strings, None, tuples)."""
    return field(default=default, metadata={HASH_NEUTRAL: True})


def choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``; else raise a ``ValueError`` naming ``name``."""
    allowed = tuple(allowed)
    if value not in allowed:
        listed = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"parameter {name}={value!r} is not valid; allowed values: {listed}")
    return value


def regime_name(regime: str) -> str:
    """Canonical regime name (a registered regime, :mod:`eaglebook.regimes`); accepts the paper's aliases
    ``centralized`` and ``compute-limited``.  An unknown name is a ``ValueError`` listing the registered ones."""
    return regimes.canonical(regime)


def check_int(name: str, value: Any, *, minimum: int = 0) -> int:
    """Validate an integer parameter (bools are rejected) and return it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"parameter {name}={value!r} is not valid; allowed values: integers >= {minimum}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """Validate a boolean parameter and return it."""
    if not isinstance(value, bool):
        raise ValueError(f"parameter {name}={value!r} is not valid; allowed values: True, False")
    return value


def check_float(name: str, value: Any, *, lower: float = 0.0, upper: float = math.inf, lower_open: bool = True,
                upper_closed: bool = True, allowed: str | None = None) -> float:
    """Validate a real parameter in (lower, upper] (bools and non-numbers rejected); return it as a float."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    if ok:
        v = float(value)
        ok = (v > lower if lower_open else v >= lower) and (v <= upper if upper_closed else v < upper)
    if not ok:
        if allowed is None:
            lo = f"{'>' if lower_open else '>='} {lower:g}"
            allowed = lo if upper == math.inf else f"numbers {lo} and {'<=' if upper_closed else '<'} {upper:g}"
        raise ValueError(f"parameter {name}={value!r} is not valid; allowed values: {allowed}")
    return float(value)


def resolve_profile(profile: str | None = None) -> str:
    """An explicit ``profile`` wins; otherwise ``$EAGLEBOOK_PROFILE``; otherwise ``'paper'``.  A bad value is
    a one-line ``ValueError`` naming where it came from (the argument, or the environment variable)."""
    if profile is None:
        env = os.environ.get(PROFILE_ENV)
        if env and env not in PROFILES:
            raise ValueError(f"environment variable {PROFILE_ENV}={env!r} is not a profile; valid profiles: "
                             f"{', '.join(PROFILES)} (or leave it unset: paper)")
        profile = env or "paper"
    return choice("profile", profile, PROFILES)


@dataclass(frozen=True)
class TaskConfig:
    """The paper's training distribution.

    X = R1 R2ᵀ/√s with rows of R1 (d+d' × s) and R2 (n+n' × s) drawn from N(0, Σ), Σ_ii = alpha**i,
    i = 1..s (the literal reading; the book's reading notes).  ``noise_var`` is the variance σ² of i.i.d. Gaussian
    noise added to every entry of X (0 or 1e-2 in the paper).
    """

    n: int = 18
    d: int = 18
    n_prime: int = 2
    d_prime: int = 2
    s: int = 10
    alpha: float = 0.7
    noise_var: float = 0.0
    #: the share of samples that carry the noise (1: every sample, the book's reading; 0.5: the "half of the
    #: training samples" reading of secondary summaries, chapter 11).  Hash-neutral.
    noise_fraction: float = neutral(1.0)
    #: variance of a full-rank Gaussian component that is part of the *truth* X (not noise on the
    #: observation): with it rank(X) = min(d+d', n+n') > rank(A) and the Nyström completion is no longer
    #: the truth (chapter 11).  Hash-neutral.
    floor_var: float = neutral(0.0)

    def __post_init__(self):
        for k in ("n", "d", "n_prime", "d_prime", "s"):
            check_int(k, getattr(self, k), minimum=1)
        if self.s > min(self.n + self.n_prime, self.d + self.d_prime):
            raise ValueError(f"parameter s={self.s} is not valid; the rank cannot exceed min(n+n', d+d')")
        check_float("alpha", self.alpha, upper=1.0, allowed="0 < alpha <= 1")
        check_float("noise_var", self.noise_var, lower_open=False, upper_closed=False, allowed="finite numbers >= 0")
        check_float("noise_fraction", self.noise_fraction, lower_open=False, upper=1.0, allowed="numbers in [0, 1]")
        check_float("floor_var", self.floor_var, lower_open=False, upper_closed=False, allowed="finite numbers >= 0")


@dataclass(frozen=True)
class ModelConfig:
    """The attention-only linear transformer (the paper's App. B; the book's chapter 2)."""

    regime: str = "unconstrained"
    layers: int = 4
    heads: int = 1          # unconstrained only; sketched has 1 head, distributed one head per machine
    r: int = 5              # sketched: rank of W_Q, W_K
    machines: int = 3       # distributed: number of machines M
    init_std: float = 0.02  # the paper gives no initialisation (the book's reading notes)
    vp_width: int | None = None  # sketched: columns of W_V, W_P; None = r + n' (the paper's App. B.4 as written)
    #: "linear" (the paper's) or "softmax": softmax over the d keys the mask leaves, no 1/√k scaling
    #: (chapter 11).  Hash-neutral.
    attention: str = neutral("linear")

    def __post_init__(self):
        object.__setattr__(self, "regime", regimes.canonical(self.regime))
        choice("attention", self.attention, ATTENTIONS)
        check_int("layers", self.layers, minimum=1)
        check_int("heads", self.heads, minimum=1)
        check_int("r", self.r, minimum=1)
        check_int("machines", self.machines, minimum=1)
        if self.vp_width is not None:
            check_int("vp_width", self.vp_width, minimum=1)
        check_float("init_std", self.init_std, upper_closed=False, allowed="finite numbers > 0")


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a trained model.  Its hash is the cache key."""

    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    steps: int = 20_000
    batch: int = 1024
    lr: float = 1e-3
    clip: float = 0.1
    eval_every: int = 250
    eval_size: int = 4096
    seed: int = 0
    dtype: str = "float32"
    skip_nonfinite: bool = True
    #: "adam" (the paper's) or "sgd" (SGD with heavy-ball momentum ``momentum``; chapter 11).  Hash-neutral.
    optimizer: str = neutral("adam")
    momentum: float = neutral(0.9)

    def __post_init__(self):
        check_int("steps", self.steps, minimum=1)
        check_int("batch", self.batch, minimum=1)
        check_float("lr", self.lr, upper_closed=False, allowed="finite numbers > 0")
        check_float("clip", self.clip, allowed="numbers > 0 (inf: no clipping)")
        check_int("seed", self.seed, minimum=0)
        choice("dtype", self.dtype, ("float32", "float64"))
        choice("optimizer", self.optimizer, OPTIMIZERS)
        check_float("momentum", self.momentum, lower_open=False, upper=1.0, upper_closed=False, allowed="numbers in [0, 1)")
        self.check_setup()

    def check_setup(self) -> None:
        """Check that the task and the model fit each other: here the regime's own rule (e.g. M must divide n).
        A config that extends this one for another task (chapter 10's :class:`eaglebook.icl.task.ICLTrain`)
        checks its own fields here."""
        regimes.get(self.model.regime).attention.validate(self.model, self.task)


@dataclass(frozen=True)
class Tolerances:
    """Bounds used by the chapters' *checks* (never by paper comparisons)."""

    nystrom_rel_err: float = 1e-10   # float64 Nyström completion of a noiseless X
    kappa_rel_err: float = 1e-8      # the κ generator hits the requested κ
    # A trained model's median MSE is this many times below predicting 0.  The paper profile measured
    # 71× (unconstrained) and 45× (distributed); the sketched regime, whose per-layer update sees only r = 5
    # of the 18 directions, 10.7×.
    beats_zero_factor: float = 20.0
    beats_zero_sketched: float = 8.0
    # Emergent structure (chapter 4).  A random matrix scores ≈ 1.0 on both masses, so these bounds say
    # "clearly structured", not "exactly the paper's structure" (that is a paper comparison).
    offdiag_max: float = 0.4         # mean over layers of W_QK's mass off diag(α¹ I_n, 0) (paper profile: 0.07–0.25)
    sketch_fit_max: float = 0.5      # sketched: mean ‖Q − a P‖/‖Q‖ of W_QK's data block vs its rank-r projector
    cross_data_max: float = 0.1      # distributed: share of the "other" projection in the data block

    def beats_zero(self, regime: str) -> float:
        """The beats-zero factor required of a model of ``regime`` (the regime names its field)."""
        return getattr(self, regimes.get(regime).paper.beats_zero_tolerance)


@dataclass(frozen=True)
class BenchSizes:
    """Chapter 7's benchmark sizes (``python -m eaglebook.bench``).  ``paper`` uses the paper's sizes
    (§5.1, §5.3, §5.4, App. E.3); ``ci`` small ones, except where a claim is about a size (the headline
    n = 240 comparison and the s = 240…30 per-iteration timings use the paper's n in both)."""

    central_n: int = 240                                  # (a) n = d of the κ sweep
    kappas: tuple[float, ...] = (1e2, 1e4, 1e6, 1e8)
    size_ns: tuple[int, ...] = (240, 480, 960, 1920)      # (a) EAGLE vs lstsq as n grows (κ = 1e4)
    headline_n: int = 240                                 # (a) EAGLE vs CGLS vs LSMR at κ = 1e4, to 1e-6
    time_limit: float = 10.0                              # seconds per iterative run
    max_iter: int = 200_000
    repeats: int = 3                                      # timing repeats (median) for the headline runs
    overhead_iters: int = 5000                            # iterations per method when measuring the overhead
    sketch_n: int = 240                                   # (b) n = d of the r sweep (r = n/8 … n)
    sketch_kappa: float = 1e2
    sketch_timing_n: int = 240                            # (b) per-iteration time at s = 240, 120, 60, 30
    sketch_timing_iters: int = 50
    real_max_cols: int | None = None                      # (c) illc1850: use only its first columns (None: all)
    ablation_n: int = 240                                 # (d) six distributions, noise
    ablation_instances: int = 20                          # (d) step-size grid instances
    grid_points: int = 10                                 # (d) factors in [0.2, 2]
    # (e) the solver-choice grid (eaglebook.bench.grid): square n (κ = 1e4), tall/wide short side k (8k × k),
    # the κ sweep's n and κs, the n of the precision and thread jobs, the target, interleaved repeats, and the
    # time limit of one traced run.  The paper profile's square sizes go to n = 1920 (tall/wide: 960×120): the
    # n = 3840 row alone took about 27 minutes on one core of a shared 2-core CPU, most of a paper build, so it
    # is on request (`python -m eaglebook.bench grid --ns 240,480,960,1920,3840`); the result is cached like a
    # trained model, once per machine
    grid_ns: tuple[int, ...] = (240, 480, 960, 1920)
    grid_tall_ns: tuple[int, ...] = (30, 60, 120)
    grid_kappas: tuple[float, ...] = (1e2, 1e4, 1e8, 1e12)
    grid_kappa_n: int = 240
    grid_precision_n: int = 240
    grid_target: float = 1e-6
    grid_repeats: int = 3
    grid_time_limit: float = 60.0
    # (e) batches of small square problems (count, n) at κ = 1e2: EAGLE's batched solve beside batched LU and
    # batched least squares, the paper's own setting of many small prompts at once
    grid_batches: tuple[tuple[int, int], ...] = ((10_000, 20), (2_000, 50))
    # (e) the whole default solve against the GEMM floor of its own iterations, with the certification share
    # (eaglebook.solver.bench.bench_batches): (name, instances or None for one problem, n = d, κ)
    grid_floor: tuple[tuple, ...] = (("one n = 960 problem", None, 960, 1e4), ("10,000 of 20×20", 10_000, 20, 1e2),
                                     ("2,000 of 50×50", 2_000, 50, 1e2))


@dataclass(frozen=True)
class Profile:
    """A named budget.  ``train`` is the base training config; chapters override regime and seed."""

    name: str
    train: TrainConfig
    seeds: tuple[int, ...]
    tol: Tolerances = field(default_factory=Tolerances)
    n_task_samples: int = 20_000   # chapter 1: samples drawn to show the tail of ‖A‖₂
    prune_heads: int = 8           # chapter 3: heads of the model that is pruned to one head
    prune_finetune_steps: int = 2000  # chapter 3: fine-tuning steps after pruning
    eagle_n: int = 240             # chapter 5: n = d of the solver demonstrations (the paper's default)
    bench: BenchSizes = field(default_factory=BenchSizes)   # chapter 7: benchmark sizes
    ns_n: int = 120                # chapter 6: n = d of the theorem checks and the κ sweep
    ns_kappa_max: float = 1e14     # chapter 6: the κ sweep runs over 1e1, 1e2, …, ns_kappa_max
    ns_alpha_d: int = 30           # chapter 6: rows d of the distributed α sweep (3 machines, d−1 columns each)
    ns_alpha_min: float = 0.01     # chapter 6: the smallest diversity index of the α sweep (cost ∝ 1/α)
    # chapter 8 (distributed): the M sweep's dataset (n = d, rank ≤ n/16 so that α = 1 and every block is well
    # conditioned for every M ≤ 8), the
    # diversity sweep (d rows, joint rank r, M = 3, runs per α value), the rounds allowed to distributed GD,
    # the freezing variant's size, and the processes of the real multi-process run
    dist_n: int = 1000
    dist_rank: int = 50
    dist_kappa: float = 1e3
    dist_alpha_d: int = 240
    dist_alpha_r: int = 41
    dist_runs: int = 10
    dist_gd_max_iter: int = 50_000
    dist_freeze_d: int = 240
    dist_procs: int = 3
    # chapter 9 (what did not reproduce): seeds per sketched or noise ablation (the seed-to-seed spread of the
    # statistics is measured on the profile's seeds of the default, in chapter 4), held-out prompts of the
    # heavy-tail analysis, and the seeds of the 8 → 1 head-pruning experiment (an 8-head model per seed; one
    # costs about 26 minutes on one core, 4× a one-head model, so three seeds, as for the other ablations)
    ablation_seeds: tuple[int, ...] = (0, 1, 2)
    tail_prompts: int = 20_000
    prune_seeds: tuple[int, ...] = (0, 1, 2)
    # timing comparisons in the chapters (eaglebook.timing): interleaved repeats per compared pair
    timing_repeats: int = 7
    # chapter 11 (beyond the paper): training steps of its one-change models (None: the profile's, the paper's
    # recipe; the ci profile trains shorter ones, since it tests the pipeline only)
    beyond_steps: int | None = None
    #: The knobs this profile was given that changed its setting (name → value; see :func:`get`).
    knobs: Mapping[str, Any] = field(default_factory=dict)
    #: Regimes beyond the paper's that the book shows under this profile: modules, each defining one regime as
    #: ``REGIME`` (the ci profile's toy regime, :mod:`eaglebook.regimes.toy`, tests that a regime is one file).
    extra_regimes: tuple[str, ...] = ()

    @property
    def regimes(self) -> tuple[str, ...]:
        """The regimes the book shows under this profile (chapter 4 has a page for each): the paper's, in its
        order, then :attr:`extra_regimes`, which this registers (:func:`eaglebook.regimes.register`)."""
        import importlib
        extra = []
        for module in self.extra_regimes:
            rg = importlib.import_module(module).REGIME
            if rg.name not in regimes.names():
                regimes.register(rg)
            extra.append(rg.name)
        return REGIMES + tuple(extra)

    def training(self, regime: str = "unconstrained", seed: int = 0, **model_overrides) -> TrainConfig:
        """The training config for one regime and seed under this profile.

        A model setting that only some regimes read (``heads``, ``r``, ``vp_width``, ``machines``: see
        :attr:`eaglebook.regimes.Regime.uses`) keeps its default in the configs of a regime that does not
        read it, so a knob such as ``r`` changes the cache keys of the sketched models only."""
        rg = regimes.get(regime)
        unread = set().union(*(regimes.get(k).uses for k in regimes.names())) - rg.uses
        base = ModelConfig()
        model = replace(self.train.model, regime=rg.name, **{k: getattr(base, k) for k in sorted(unread)})
        model = replace(model, **model_overrides)
        return replace(self.train, model=model, seed=check_int("seed", seed))

    def value(self, knob: str) -> Any:
        """The value of ``knob`` (a name in :data:`KNOBS`) in this profile."""
        k = KNOBS[knob]
        if k.part == "profile":
            return getattr(self, k.name)
        return getattr(self.train if k.part == "train" else getattr(self.train, k.part), k.name)

    def setting(self) -> str:
        """How this profile's setting differs from the paper's, in words (empty when no knob changed it):
        each changed knob with the paper's value, and the regimes that read it where not all do."""
        if not self.knobs:
            return ""
        paper = get("paper")
        parts = []
        for name, v in self.knobs.items():
            k = KNOBS[name]
            readers = [r for r in regimes.PAPER if name in regimes.get(r).uses]
            only = f"; read by the {' and '.join(readers)} regime{'s' if len(readers) > 1 else ''} only" \
                if k.part == "model" and readers else ""
            parts.append(f"{k.symbol} = {_show(v)} (paper: {_show(paper.value(name))}{only})")
        return "; ".join(parts)


def _paper() -> Profile:
    return Profile(name="paper", train=TrainConfig(), seeds=tuple(range(10)))


def _ci() -> Profile:
    # Small and quick: a shorter run that still learns the structure (tolerances loosened only where
    # a shorter run is honestly less accurate; see each chapter's reproduction notes).
    train = TrainConfig(steps=1500, batch=256, eval_every=100, eval_size=2048)
    return Profile(name="ci", train=train, seeds=(0, 1), n_task_samples=4000, prune_finetune_steps=300, eagle_n=60,
                   ns_n=40, ns_alpha_d=18, ns_alpha_min=0.03,
                   dist_n=96, dist_rank=6, dist_alpha_d=48, dist_alpha_r=9, dist_runs=4, dist_gd_max_iter=12_000,
                   dist_freeze_d=96, dist_procs=3, ablation_seeds=(0,), tail_prompts=4000, prune_seeds=(0,), timing_repeats=5,
                   beyond_steps=500, extra_regimes=("eaglebook.regimes.toy",),
                   tol=Tolerances(beats_zero_factor=3.0, beats_zero_sketched=3.0, offdiag_max=0.7),
                   bench=BenchSizes(central_n=60, kappas=(1e2, 1e4, 1e8), size_ns=(60, 120, 240), time_limit=0.3, overhead_iters=500,
                                    repeats=1, sketch_n=80, sketch_timing_iters=20, real_max_cols=120, ablation_n=60,
                                    ablation_instances=4, grid_points=5, grid_ns=(32, 64, 128), grid_tall_ns=(16, 32),
                                    grid_kappa_n=64, grid_precision_n=64, grid_time_limit=5.0,
                                    grid_batches=((200, 8), (50, 16)),
                                    grid_floor=(("one n = 64 problem", None, 64, 1e4), ("500 of 20×20", 500, 20, 1e2),
                                                ("100 of 50×50", 100, 50, 1e2))))


# ---------------------------------------------------------------------------------------------- knobs
@dataclass(frozen=True)
class Knob:
    """One setting of the set-up that a chapter takes as a parameter.

    ``part``: where it lives (``task``: :class:`TaskConfig`, ``model``: :class:`ModelConfig`, ``train``:
    :class:`TrainConfig`, ``profile``: :class:`Profile`), under the field ``name``; ``kind``: ``int``,
    ``float``, ``int_or_none``, ``choice`` (a string from a fixed list) or ``seeds``; ``symbol``: as the paper writes it; ``what``: in words.
    The allowed range is checked where the value lands (the config classes), so that the error names
    the knob and its range.
    """

    name: str
    part: str
    kind: str
    symbol: str
    what: str


KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob("n", "task", "int", "n", "data columns of A (and B)"),
    Knob("d", "task", "int", "d", "rows of A (and C)"),
    Knob("n_prime", "task", "int", "n′", "query columns (C, D)"),
    Knob("d_prime", "task", "int", "d′", "query rows (B, D)"),
    Knob("s", "task", "int", "s", "rank of X"),
    Knob("alpha", "task", "float", "α", "decay of the spectrum, Σ_ii = α^i"),
    Knob("noise_var", "task", "float", "σ²", "variance of the noise on every entry of X"),
    Knob("noise_fraction", "task", "float", "noise share", "share of the samples that carry the noise"),
    Knob("floor_var", "task", "float", "σ²_floor", "variance of a full-rank part of the true X (not low-rank data)"),
    Knob("layers", "model", "int", "L", "layers"),
    Knob("heads", "model", "int", "H", "attention heads (unconstrained)"),
    Knob("r", "model", "int", "r", "rank of W_Q, W_K (sketched)"),
    Knob("vp_width", "model", "int_or_none", "k", "columns of W_V, W_P (sketched; None: r + n′)"),
    Knob("machines", "model", "int", "M", "machines (distributed)"),
    Knob("init_std", "model", "float", "init std", "standard deviation of the initial weights"),
    Knob("attention", "model", "choice", "attention", "the layers' attention: linear (the paper's) or softmax"),
    Knob("steps", "train", "int", "steps", "training steps"),
    Knob("batch", "train", "int", "batch", "batch size"),
    Knob("lr", "train", "float", "lr", "learning rate"),
    Knob("clip", "train", "float", "clip", "gradient-norm clipping"),
    Knob("optimizer", "train", "choice", "optimiser", "adam (the paper's) or sgd (with momentum)"),
    Knob("momentum", "train", "float", "momentum", "SGD's momentum (optimizer sgd only)"),
    Knob("seeds", "profile", "seeds", "seeds", "the profile's seeds: a count k (seeds 0..k−1) or a list"),
)}


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return ", ".join(map(str, v)) if len(v) <= 4 else f"{v[0]}…{v[-1]} ({len(v)})"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _coerce(knob: Knob, value: Any) -> Any:
    """The value in the type its field holds (an int given for a float knob becomes a float, so that
    ``alpha=1`` and ``alpha=1.0`` are the same config); ranges are checked by the config classes."""
    name = knob.name
    if knob.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if knob.kind == "int_or_none" and value is None:
        return None
    if knob.kind == "seeds":
        if isinstance(value, int) and not isinstance(value, bool):
            check_int(name, value, minimum=1)
            return tuple(range(value))
        if isinstance(value, str):   # "0,1,2" from a command line
            try:
                value = [int(x) for x in value.replace(" ", "").split(",") if x]
            except ValueError:
                pass
        if isinstance(value, (list, tuple)) and value and len(set(value)) == len(value):
            return tuple(check_int(name, v, minimum=0) for v in value)
        raise ValueError(f"parameter seeds={value!r} is not valid; allowed values: a count k >= 1 (seeds 0..k−1) "
                         "or a list of distinct integers >= 0")
    return value


def check_knobs(knobs: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` for a name that is not a knob, listing the knobs (and the closest name)."""
    for name in knobs:
        if name not in KNOBS:
            close = difflib.get_close_matches(str(name), list(KNOBS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"parameter {name!r} is not a knob{hint}; the knobs are: {', '.join(KNOBS)}")


def _parts(knobs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    check_knobs(knobs)
    parts: dict[str, dict[str, Any]] = {"task": {}, "model": {}, "train": {}, "profile": {}}
    for name, v in knobs.items():
        parts[KNOBS[name].part][name] = _coerce(KNOBS[name], v)
    return parts


def _apply(cfg: TrainConfig, parts: dict[str, dict[str, Any]]) -> TrainConfig:
    task = replace(cfg.task, **parts["task"])
    model = replace(cfg.model, **parts["model"])
    return replace(cfg, task=task, model=model, **parts["train"])


def apply_knobs(cfg: TrainConfig, knobs: Mapping[str, Any]) -> TrainConfig:
    """``cfg`` with ``knobs`` (task, model and training knobs; validated) applied."""
    parts = _parts(knobs)
    if parts["profile"]:
        raise ValueError(f"parameter {next(iter(parts['profile']))!r} is a profile knob; a training config has none")
    return _apply(cfg, parts)


def with_knobs(p: Profile, knobs: Mapping[str, Any]) -> Profile:
    """``p`` with ``knobs`` applied (validated; see :func:`get`)."""
    parts = _parts(knobs)
    out = replace(p, train=_apply(p.train, parts), **parts["profile"])
    changed = {name: out.value(name) for name in KNOBS if name in knobs and out.value(name) != p.value(name)}
    for r in regimes.PAPER:   # every regime's configs must build under the new setting (e.g. M divides n)
        out.training(r)
    return replace(out, knobs={**p.knobs, **changed})


def get(profile: str | None = None, *, knobs: Mapping[str, Any] | None = None, **train_overrides) -> Profile:
    """The profile ``profile`` (resolved by :func:`resolve_profile`), with optional TrainConfig overrides and
    ``knobs`` (:data:`KNOBS` name → value; ``None`` values are ignored).  A knob set to the profile's own
    value changes nothing (and is not recorded in :attr:`Profile.knobs`)."""
    p = {"paper": _paper, "ci": _ci}[resolve_profile(profile)]()
    if train_overrides:
        p = replace(p, train=replace(p.train, **train_overrides))
    if knobs:
        p = with_knobs(p, {k: v for k, v in knobs.items() if v is not None})
    p.regimes   # registers the profile's regimes beyond the paper's, so that a chapter may be given one
    return p
