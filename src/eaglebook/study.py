"""Ask your own question: change knobs of the set-up, train, and apply chapter 11's declared test.

    python -m eaglebook.study --profile ci --vary layers=2,4 --vary lr=3e-4,1e-3 --seeds 2 --json out.json --plot out.png

Every combination of the ``--vary`` grids (knob names: :data:`eaglebook.config.KNOBS`; ``--set`` fixes a
knob for all of them) is one *setting*; each trains on every seed, starting from chapter 11's base config
(:func:`eaglebook.beyond.base_config`: the profile's, with the chapter's steps), so a setting that is one of
chapter 11's changes shares its cache entries, shipped models included.  Training goes through the cache
(:func:`eaglebook.training.train_missing`: what exists is not trained again) on this machine's process pool,
or on a Dask cluster (``--scheduler``, else ``$EAGLEBOOK_SCHEDULER``: ``local`` or ``tcp://host:port``).

Each model is assessed by :func:`eaglebook.beyond.assess` and each setting answered by
:func:`eaglebook.beyond.answer`, the code chapter 11 uses: structure, scaling law (η, γ), fidelity and
beats-zero on the medians over seeds, 4 tests *yes*, 1–3 *partly*, 0 (or no structure) *no*, with the structure
test at the reference's size (:func:`eaglebook.beyond.sized_mass`: the same as declared at n = 18, and what chapter
11 judges a change of size by since v0.4.0).  The test was
declared for the unconstrained regime (chapter 11's); a knob that only the sketched (``r``, ``vp_width``) or
distributed (``machines``) regime reads selects that regime, where the structure test measures W_QK against
the unconstrained model's diagonal form, so a *no* there may be the regime's own structure.

Output: a table on stdout; ``--json FILE`` (the settings, each model's statistics and where it was trained:
``cache``, ``this machine`` or the Dask worker's address); ``--plot FILE`` (the four tests per setting).
Bad input (an unknown knob, an impossible value, a malformed or unreachable scheduler) fails before any
training with one line naming it, exit code 2.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from . import beyond, cache, cluster, config, regimes, training
from .config import KNOBS, TrainConfig
from .knobsets import KnobSet

__all__ = ["Setting", "parse_assignment", "parse_seeds", "choose_regime", "plan", "run", "table", "plot", "main"]

PROG = "python -m eaglebook.study"


class StudyError(ValueError):
    """Bad input to the study; its message is one line naming the knob or argument."""


# ----------------------------------------------------------------------------------------------- parsing
def _value(name: str, text: str) -> Any:
    """``text`` as a value of knob ``name`` (its range is checked where it lands, by the config)."""
    knob = KNOBS[name]
    t = text.strip()
    try:
        if knob.kind == "int":
            return int(t)
        if knob.kind == "int_or_none":
            return None if t.lower() == "none" else int(t)
        if knob.kind == "float":
            v = float(t)
            if not math.isfinite(v):
                raise ValueError
            return v
    except ValueError:
        kind = {"int": "an integer", "int_or_none": "an integer or none", "float": "a finite number"}[knob.kind]
        raise StudyError(f"knob {name}: {t!r} is not {kind}") from None
    if not t:
        raise StudyError(f"knob {name}: empty value")
    return t


def parse_assignment(text: str, *, many: bool) -> tuple[str, list[Any]]:
    """``knob=v1,v2,…`` (``many``) or ``knob=v`` as (knob, values); unknown knobs and malformed values are a
    :class:`StudyError` naming the knob."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise StudyError(f"{text!r} is not knob=value{',value…' if many else ''}")
    try:
        config.check_knobs({name: None})
    except ValueError as e:
        raise StudyError(str(e).replace("parameter ", "", 1)) from None
    if KNOBS[name].kind == "seeds":
        raise StudyError("knob seeds: give the seeds with --seeds, not as a knob")
    parts = rest.split(",") if many else [rest]
    values = [_value(name, p) for p in parts]
    if len(set(map(repr, values))) != len(values):
        raise StudyError(f"knob {name}: the values {rest!r} repeat one")
    return name, values


def parse_seeds(text: str | None, profile: config.Profile) -> tuple[int, ...]:
    """``--seeds``: a count k (seeds 0..k−1) or a comma-separated list; default: chapter 11's seeds
    (the profile's ablation seeds)."""
    if text is None:
        return tuple(profile.ablation_seeds)
    t = text.strip()
    try:
        value: Any = int(t) if t.isdigit() else t
        return tuple(config.get(profile.name, knobs={"seeds": value}).seeds)
    except ValueError as e:
        raise StudyError(str(e).replace("parameter ", "--", 1)) from None


def choose_regime(knobs: Sequence[str], regime: str | None = None) -> str:
    """The regime a study of ``knobs`` trains: ``regime`` if given (every knob must be one it reads); else
    the one regime that reads the regime-specific knobs among them (``r`` → sketched, ``machines`` →
    distributed, ``heads`` → unconstrained), or chapter 11's unconstrained one when there are none."""
    specific = {k: [r for r in regimes.PAPER if k in regimes.get(r).uses] for k in knobs
                if any(k in regimes.get(r).uses for r in regimes.PAPER)}
    if regime is not None:
        try:
            regime = regimes.canonical(regime)
        except ValueError as e:
            raise StudyError(str(e).replace("argument ", "--", 1)) from None
        for k, readers in specific.items():
            if k not in regimes.get(regime).uses:
                raise StudyError(f"knob {k} is not read by the {regime} regime (only by {' and '.join(readers)}): "
                                 f"pass --regime {readers[0]} or leave {k} out")
        return regime
    common = set(regimes.PAPER)
    for readers in specific.values():
        common &= set(readers)
    if not common:
        raise StudyError("knobs " + " and ".join(f"{k} ({'/'.join(r)})" for k, r in specific.items())
                         + " are read by different regimes; a study trains one regime")
    return next(r for r in regimes.PAPER if r in common)


# ----------------------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class Setting:
    """One combination of the grids: the change it makes (a :class:`~eaglebook.knobsets.KnobSet` of the knobs
    varied, named by them, the type of chapter 9's ablations and chapter 11's changes) and its training configs,
    one per seed (the ``--set`` knobs applied too)."""

    change: KnobSet
    cfgs: tuple[TrainConfig, ...]

    @property
    def knobs(self) -> Mapping[str, Any]:
        return self.change.knobs

    @property
    def label(self) -> str:
        return self.change.label


def _show(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def plan(profile: config.Profile, regime: str, grids: Mapping[str, Sequence[Any]], fixed: Mapping[str, Any],
         seeds: Sequence[int]) -> list[Setting]:
    """Every setting of the grids (in the order given, the last knob varying fastest) with its configs:
    :func:`eaglebook.beyond.base_config` for ``regime`` and each seed, ``fixed`` and the setting's knobs
    applied.  Every config is built (and so validated) here, before anything trains; an impossible value
    is a :class:`StudyError` naming the knob."""
    out = []
    names = list(grids)
    for combo in itertools.product(*(grids[k] for k in names)):
        knobs = dict(zip(names, combo))
        label = ", ".join(f"{k}={_show(v)}" for k, v in knobs.items()) or "base"
        change = KnobSet(label, label, f"a setting of the study: {label}", knobs)
        cfgs = []
        for s in seeds:
            try:
                base = beyond.base_config(profile, s, regime)
                cfgs.append(config.apply_knobs(base, {**fixed, **change.settings(base)}))
            except (ValueError, TypeError) as e:
                shown = ", ".join(f"{k}={_show(v)}" for k, v in {**fixed, **knobs}.items())
                msg = (str(e).splitlines() or [""])[0].replace("parameter ", "knob ", 1)
                raise StudyError(f"{msg} (setting {shown})") from None
        out.append(Setting(change, tuple(cfgs)))
    return out


# ----------------------------------------------------------------------------------------------- running
def _plain(x: Any) -> Any:
    """JSON-ready data: numpy arrays and scalars to lists and numbers, non-finite numbers to strings."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_plain(v) for v in x.tolist()]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


def run(settings: Sequence[Setting], *, scheduler: str | None = None, workers: int | None = None,
        executor=None, progress: bool = True) -> list[dict[str, Any]]:
    """Train what the cache lacks (:func:`eaglebook.training.train_missing`), assess every model
    (:func:`eaglebook.beyond.assess`) and answer every setting (:func:`eaglebook.beyond.answer`).  Returns
    one dict per setting: ``knobs``, ``label``, ``runs`` (per seed: config hash, where it was trained,
    seconds, statistics, the tests that hold) and the answer's ``median``, ``held``, ``score``, ``verdict``,
    ``answer``."""
    cfgs = [c for s in settings for c in s.cfgs]
    where = training.train_missing(cfgs, executor=executor, scheduler=scheduler, workers=workers, progress=progress)
    bar = training.tqdm_class()(total=len(cfgs), desc=f"assessing {len(cfgs)} models") if progress else None
    out = []
    for s in settings:
        runs = []
        for c in s.cfgs:
            r = training.trained(c, progress=False)
            st = beyond.assess(r)
            runs.append({"seed": c.seed, "config": cache.config_hash(c), "trained": where[c], "seconds": r.seconds,
                         "stats": st, "held": beyond.tests_held(st, sized=True)})
            if bar is not None:
                bar.update(1)
        ans = beyond.answer([r["stats"] for r in runs], sized=True)
        out.append({"knobs": dict(s.knobs), "label": s.label, "runs": runs, **ans})
    if bar is not None:
        bar.close()
    return out


# ----------------------------------------------------------------------------------------------- output
def _where_summary(runs: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in runs:
        counts[r["trained"]] = counts.get(r["trained"], 0) + 1
    return "; ".join(f"{n} {w}" if n > 1 else w for w, n in counts.items())


def table(results: Sequence[Mapping[str, Any]]) -> str:
    """The study's table (plain text): per setting the medians over seeds of the test statistics, the tests
    held, the score, the answer, and where its models came from."""
    head = ["setting", "seeds", "W_QK off", "W_VP off", "eta", "gamma", "fidelity", "zero/model", "held",
            "score", "answer", "trained"]
    rows = []
    for r in results:
        m = r["median"]
        held = "".join(c if r["held"][t] else "-" for c, t in zip("SLFZ", beyond.TESTS))
        rows.append([r["label"], str(len(r["runs"])), f"{m['offdiag_qk']:.2f}", f"{m['offdiag_vp']:.2f}",
                     f"{m['eta']:.3g}", f"{m['gamma']:.3g}", f"{m['fidelity']:.1e}", f"{m['reduction']:.3g}",
                     held, f"{r['score']:.0f}/4", r["answer"], _where_summary(r["runs"])])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def declaration() -> str:
    """The declared test in one paragraph (the legend of the table's ``held`` column)."""
    n, n_prime = beyond.STRUCTURE_SIZE
    return (f"The test (chapter 11, eaglebook.beyond), on the medians over seeds: S structure (off-structure mass of "
            f"W_QK and W_VP <= {beyond.STRUCTURE_MAX:g}, converted to n = {n}, n' = {n_prime} at the same deviation "
            f"per entry), L scaling law (eta within {beyond.LAW_FACTOR:g}x of "
            f"{beyond.ETA:g}, gamma within {beyond.LAW_FACTOR:g}x of {beyond.GAMMA:g}), F fidelity (<= "
            f"{beyond.FIDELITY_MAX:.0e}), Z beats zero (zero/model >= {beyond.BEATS_ZERO_MIN:g}). Score: the tests "
            "held, 0 without the structure; 4 yes, 1-3 partly, 0 no.")


def _write_atomic(path: Path, write) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{path.name}-", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _law_factor(stats: Mapping[str, float]) -> float:
    """How far η and γ are from the law (1, 1.9), as the worst factor (NaN where one is not positive)."""
    e, g = stats["eta"], stats["gamma"]
    if not (e > 0 and g > 0):
        return math.nan
    return max(e / beyond.ETA, beyond.ETA / e, g / beyond.GAMMA, beyond.GAMMA / g)


def plot(results: Sequence[Mapping[str, Any]], path: str | Path, *, title: str = "") -> None:
    """The four tests per setting (one panel each; every seed a dot, the median a bar, the test's bound a
    line), the answers in the title; written atomically to ``path`` (format from its suffix)."""
    from matplotlib.figure import Figure

    labels = [r["label"] for r in results]
    x = np.arange(len(results))
    fig = Figure(figsize=(max(8.0, 1.2 * len(results) + 4), 6.5), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True).ravel()

    def panel(ax, key, bound, name, log=False):
        for i, r in enumerate(results):
            vals = [s["stats"][key] for s in r["runs"]] if not callable(key) else [key(s["stats"]) for s in r["runs"]]
            med = r["median"][key] if not callable(key) else key(r["median"])
            ax.plot([i] * len(vals), vals, "o", color="C0", alpha=0.6, ms=5, label="seeds" if i == 0 else None)
            ax.plot([i - 0.25, i + 0.25], [med, med], "-", color="C1", lw=2.5, label="median" if i == 0 else None)
        if bound is not None:
            ax.axhline(bound, color="C3", ls="--", lw=1, label="the test's bound")
        if log:
            ax.set_yscale("log")
        ax.set_title(name, fontsize=10)

    panel(axes[0], lambda s: max(s["offdiag_qk"], s["offdiag_vp"]), beyond.STRUCTURE_MAX,
          f"structure: off-structure mass, W_QK or W_VP (≤ {beyond.STRUCTURE_MAX:g})")
    panel(axes[1], _law_factor, beyond.LAW_FACTOR, f"scaling law: η/{beyond.ETA:g}, γ/{beyond.GAMMA:g}, worst factor "
          f"(≤ {beyond.LAW_FACTOR:g})", log=True)
    panel(axes[2], "fidelity", beyond.FIDELITY_MAX, f"fidelity: per-entry MSE (≤ {beyond.FIDELITY_MAX:.0e})", log=True)
    panel(axes[3], "reduction", beyond.BEATS_ZERO_MIN, f"beats zero: zero ÷ model (≥ {beyond.BEATS_ZERO_MIN:g})", log=True)
    for ax in axes[2:]:
        ax.set_xticks(x, labels, rotation=30 if len(results) > 3 else 0, ha="right" if len(results) > 3 else "center",
                      fontsize=8)
    for ax in axes:
        ax.set_xlim(-0.6, len(results) - 0.4)
    axes[1].legend(fontsize=7, loc="best")
    answers = "; ".join(f"{r['label']}: {r['answer']} ({r['score']:.0f}/4)"
                        for r in results)
    fig.suptitle((title + "\n" if title else "") + answers, fontsize=9)
    _write_atomic(Path(path), lambda tmp: fig.savefig(tmp, format=Path(path).suffix.lstrip(".") or "png"))


# ----------------------------------------------------------------------------------------------- CLI
class _Parser(argparse.ArgumentParser):
    def error(self, message):   # one line, exit code 2 (argparse's usage block is kept for --help)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Change knobs of the paper's set-up, train every setting (through the cache) "
                "and apply chapter 11's declared same-algorithm test to each.",
                epilog="Knobs: " + ", ".join(KNOBS) + ". Example: " + PROG + " --profile ci --vary layers=2,4 --seeds 2")
    p.add_argument("--profile", choices=config.PROFILES, default=None,
                   help="base profile (default: $EAGLEBOOK_PROFILE, else paper)")
    p.add_argument("--vary", action="append", default=[], metavar="KNOB=V1,V2,…",
                   help="a knob's grid; repeat for more knobs (every combination is a setting)")
    p.add_argument("--set", dest="fixed", action="append", default=[], metavar="KNOB=V",
                   help="fix a knob for every setting (e.g. steps=300)")
    p.add_argument("--seeds", default=None, help="a count k (seeds 0..k-1) or a list 0,2,5 (default: chapter 11's)")
    p.add_argument("--regime", default=None, help="regime to train (default: the one the knobs need; else unconstrained)")
    p.add_argument("--scheduler", default=None,
                   help=f"train on a Dask cluster: 'local' or tcp://host:port (default: ${cluster.SCHEDULER_ENV}; "
                        "unset: this machine's process pool)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes of the local pool or of a local Dask cluster (default: one per core)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the results as JSON")
    p.add_argument("--plot", default=None, metavar="FILE", help="write a figure (png, svg, pdf)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def _check_output(opt: str, path: str | None, suffixes: tuple[str, ...] | None = None) -> None:
    if path is None:
        return
    p = Path(path)
    if not p.parent.resolve().is_dir():
        raise StudyError(f"--{opt} {path}: the folder {p.parent} does not exist")
    if suffixes and p.suffix.lower().lstrip(".") not in suffixes:
        raise StudyError(f"--{opt} {path}: allowed formats: {', '.join(suffixes)}")


def prepare(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, config.Profile, str, list[Setting]]:
    """Parse and validate everything (no training): the options, the profile, the regime and the settings."""
    a = _parser().parse_args(argv)
    if a.workers is not None and a.workers < 1:
        raise StudyError(f"--workers {a.workers}: allowed values: integers >= 1")
    profile = config.get(a.profile)
    grids: dict[str, list[Any]] = {}
    for spec in a.vary:
        name, values = parse_assignment(spec, many=True)
        if name in grids:
            raise StudyError(f"knob {name}: --vary given twice")
        grids[name] = values
    fixed: dict[str, Any] = {}
    for spec in a.fixed:
        name, (value,) = parse_assignment(spec, many=False)
        if name in grids or name in fixed:
            raise StudyError(f"knob {name}: given more than once (--vary/--set)")
        fixed[name] = value
    seeds = parse_seeds(a.seeds, profile)
    regime = choose_regime([*grids, *fixed], a.regime)
    settings = plan(profile, regime, grids, fixed, seeds)
    _check_output("json", a.json)
    _check_output("plot", a.plot, ("png", "svg", "pdf"))
    if a.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise StudyError("--plot needs matplotlib (pip install 'eaglebook[book]')") from None
    try:
        cluster.scheduler_address(a.scheduler)
        cluster.timeout()
    except ValueError as e:
        raise StudyError(str(e).replace("argument scheduler=", "--scheduler ", 1)) from None
    return a, profile, regime, settings


def main(argv: Sequence[str] | None = None) -> int:
    t0 = time.perf_counter()
    try:
        a, profile, regime, settings = prepare(argv)
    except StudyError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    n = sum(len(s.cfgs) for s in settings)
    sched = cluster.scheduler_address(a.scheduler)
    print(f"study: profile {profile.name}, regime {regime}, {len(settings)} setting(s) x {len(settings[0].cfgs)} "
          f"seed(s) = {n} models; training on " + (sched or "this machine's process pool"), flush=True)
    try:
        results = run(settings, scheduler=a.scheduler, workers=a.workers, progress=not a.no_progress)
    except cluster.SchedulerError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the models trained so far are in the cache ({cache.root()}); "
              "run the same command again to go on", file=sys.stderr)
        return 130
    seconds = time.perf_counter() - t0
    print(table(results))
    print(declaration())
    print(f"wall time {seconds:.1f} s")
    if a.json:
        doc = {"format": "eaglebook.study/1", "command": [PROG, *(sys.argv[1:] if argv is None else argv)],
               "profile": profile.name, "regime": regime, "scheduler": sched, "seconds": seconds,
               "test": {"structure_max": beyond.STRUCTURE_MAX, "structure_size": list(beyond.STRUCTURE_SIZE), "eta": beyond.ETA, "gamma": beyond.GAMMA,
                        "law_factor": beyond.LAW_FACTOR, "fidelity_max": beyond.FIDELITY_MAX,
                        "beats_zero_min": beyond.BEATS_ZERO_MIN, "criterion": beyond.CRITERION.text},
               "settings": _plain(results)}
        _write_atomic(Path(a.json), lambda tmp: Path(tmp).write_text(json.dumps(doc, indent=1)))
        print(f"wrote {a.json}")
    if a.plot:
        plot(results, a.plot, title=f"profile {profile.name}, regime {regime}")
        print(f"wrote {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
