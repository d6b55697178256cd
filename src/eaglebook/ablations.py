"""What did not reproduce, and why (chapter 9): the sketched-regime ablations, the heavy tail of the
held-out error, and the training-side ablations (noise, head pruning over seeds).

* :data:`SKETCHED` lists the one-change ablations of the sketched regime and :data:`NOISE` the noise
  ablation, each a :class:`~eaglebook.knobsets.KnobSet` (a named set of knob overrides,
  :data:`eaglebook.config.KNOBS`: the same settings a chapter takes as parameters, and the type of chapter
  11's changes too); :meth:`~eaglebook.knobsets.KnobSet.config` turns one into the
  :class:`~eaglebook.config.TrainConfig` to train (the cache key is that config's hash, so every trained
  ablation accumulates in the cache from one sitting to the next).
* :func:`rel_diff_definitions` computes the paper's Fig. 4 relative difference between the rescaled
  W_QK and W_VP sketch blocks under several readings of its definition; :func:`sketch_stats` collects,
  for one trained sketched model, everything an ablation reports.
* :func:`heavy_tail` measures, per held-out prompt, the step the learned weights take on it (the
  per-layer constants times the prompt's own ‖A‖₂², relative to the training batch maximum that the
  weights encode), its error, and the error after the batch-max normalisation (the remedy).
* :func:`structure_stats` summarises a trained unconstrained model (structure, constants, fidelity)
  for the noise ablation.

Pure functions of trained runs; nothing here trains (the chapter calls ``training.trained_all``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from . import config, extraction, tasks
from .config import TrainConfig
from .knobsets import Derived, KnobSet, find
from .models import LinearTransformer
from .training import Run, test_set


# ---------------------------------------------------------------------------------------------
# The sketched ablations


_R = "r = 5 ≈ n/4 (§3, Fig. 1)"


def _sketched(key: str, label: str, what: str, knobs: dict | None = None, departs: str = "") -> KnobSet:
    return KnobSet(key, label, what, knobs or {}, departs=departs, regime="sketched")


SKETCHED: tuple[KnobSet, ...] = (
    _sketched("base", "as written", "the book's default: r = 5, W_V, W_P of width r + n', init std 0.02"),
    _sketched("r4", "r = 4", "the rank of W_Q, W_K (and W_V, W_P width r + n')", {"r": 4}, departs=_R),
    _sketched("r6", "r = 6", "the rank of W_Q, W_K (and W_V, W_P width r + n')", {"r": 6}, departs=_R),
    _sketched("r8", "r = 8", "the rank of W_Q, W_K (and W_V, W_P width r + n')", {"r": 8}, departs=_R),
    _sketched("init_small", "init std 0.002", "10× smaller initialisation", {"init_std": 0.002}),
    _sketched("init_large", "init std 0.1", "5× larger initialisation", {"init_std": 0.1}),
    _sketched("vp_full", "W_V, W_P square", "W_V, W_P of width n + n' (only W_Q, W_K compute-limited)",
              {"vp_width": Derived("n + n′", lambda c: c.task.n + c.task.n_prime)},
              departs="W_V, W_P ∈ R^{(n+n')×(r+n')} (§3)"),
    _sketched("long", "2× steps", "twice the training steps", {"steps": Derived("2 × steps", lambda c: 2 * c.steps)},
              departs="20,000 iterations (App. B.2)"),
)

#: The training-side noise ablation (the paper's App. C): σ² = 0.01 on every entry of X.
NOISE = KnobSet("noise", "σ² = 0.01", "noise of variance 0.01 on every entry of X (App. C, Figs. 13–14)",
                {"noise_var": 0.01})


def ablation(key: str) -> KnobSet:
    """The ablation named ``key`` (one of :data:`SKETCHED`, or :data:`NOISE`)."""
    return find((*SKETCHED, NOISE), key)


#: The readings of the paper's "relative difference between the rescaled W_QK and W_VP" (Fig. 4).
REL_DIFF_DEFINITIONS = {
    "ours": "data blocks, each divided by its spectral norm; ‖Q̂ − sV̂‖_F / ‖Q̂‖_F, best sign s",
    "fro": "data blocks, each divided by its Frobenius norm; ‖Q̂ − sV̂‖_F, best sign s",
    "spectral": "data blocks, each divided by its spectral norm; ‖Q̂ − sV̂‖₂ (spectral norm of the difference)",
    "sym": "symmetric parts of the data blocks, Frobenius-normalised; best sign",
    "scale": "data blocks, best scale a: min_a ‖Q − aV‖_F / ‖Q‖_F = sin∠(Q, V)",
    "projector": "top-r projectors of the two data blocks: ‖P_Q − P_V‖_F / ‖P_Q‖_F",
    "whole": "whole (n+n')×(n+n') products, Frobenius-normalised; best sign",
}


def _best_sign(a: np.ndarray, b: np.ndarray, norm) -> float:
    return float(min(norm(a - b), norm(a + b)))


def _fro_unit(M: np.ndarray) -> np.ndarray:
    nm = np.linalg.norm(M)
    return M / nm if nm > 0 else M


def rel_diff_definitions(model: LinearTransformer) -> dict[str, np.ndarray]:
    """Per layer, the relative difference of the sketched model's W_QK and W_VP under each reading in
    :data:`REL_DIFF_DEFINITIONS` (arrays of length L; ``"ours"`` is :func:`extraction.sketch_structure`'s)."""
    sk = extraction.sketch_structure(model)
    prod = extraction.products(model)
    n = model.task.n
    out: dict[str, list[float]] = {k: [] for k in REL_DIFF_DEFINITIONS}
    fro = np.linalg.norm
    for l, s in enumerate(sk):
        W, V_ = prod.wqk[l, 0], prod.wvp[l, 0]
        Q, V = W[:n, :n], V_[:n, :n]
        sq, sv = np.linalg.norm(Q, 2), np.linalg.norm(V, 2)
        Qs, Vs = Q / (sq or 1.0), V / (sv or 1.0)
        out["ours"].append(s.rel_diff)
        out["fro"].append(_best_sign(_fro_unit(Q), _fro_unit(V), fro))
        out["spectral"].append(_best_sign(Qs, Vs, lambda x: np.linalg.norm(x, 2)))
        out["sym"].append(_best_sign(_fro_unit((Q + Q.T) / 2), _fro_unit((V + V.T) / 2), fro))
        cos = abs(float(np.sum(Q * V))) / ((fro(Q) * fro(V)) or 1.0)
        out["scale"].append(float(np.sqrt(max(0.0, 1.0 - min(1.0, cos) ** 2))))
        out["projector"].append(float(np.sqrt(max(0.0, 2.0 * (1.0 - s.projector_overlap)))))   # ‖P_Q − P_V‖_F² = 2r(1 − overlap)
        out["whole"].append(_best_sign(_fro_unit(W), _fro_unit(V_), fro))
    return {k: np.asarray(v) for k, v in out.items()}


@dataclass(frozen=True)
class SketchStats:
    """What one sketched ablation reports for one trained model.

    ``rel_diff``: median over layers of the Fig. 4 relative difference (our reading, as chapter 4);
    ``rel_diff_by_definition``: the same median under every reading of :data:`REL_DIFF_DEFINITIONS`;
    ``overlap``: median over layers of tr(P_Q P_V)/r, the overlap of the top-r subspaces of the W_QK and
    W_VP data blocks (1: the same sketch); ``gamma``: the fitted γ (chapter 4, batch-max norm);
    ``reduction``: the MSE reduction by chapter 3's headline statistic (:func:`reduction`: the zero predictor's
    MSE over the median training loss of the last 5% of the steps), from ``zero_mse`` and ``train_loss``;
    ``worse``: the fraction of held-out prompts on which the model is worse than predicting zero.
    """
    rel_diff: float
    rel_diff_by_definition: dict[str, float]
    overlap: float
    gamma: float
    reduction: float
    worse: float
    zero_mse: float = float("nan")
    train_loss: float = float("nan")


def train_loss(run: Run) -> float:
    """The run's training loss as chapter 3's headline reads it: the median batch-mean loss over the last 5% of
    the steps (:func:`eaglebook.chapters.train.train_tail`, the one definition)."""
    from .chapters.train import train_tail      # chapter 3's statistic (imported when called: that module draws)
    return train_tail(run)


def reduction(run: Run) -> float:
    """The MSE reduction of one run by chapter 3's headline statistic (the scorecard's for the 10–50× claim, the
    paper's Fig. 9): the zero predictor's MSE on the held-out prompts over the median training loss of the last
    5% of the steps (:func:`train_loss`).  Not the zero predictor's mean over the model's held-out median, which
    divides a mean by a median (chapter 3 shows it superseded)."""
    return float(run.baselines["zero_mse"] / train_loss(run))


def sketch_stats(run: Run) -> SketchStats:
    """:class:`SketchStats` of a trained sketched run."""
    model = run.model(dtype=torch.float64)
    sk = extraction.sketch_structure(model)
    defs = rel_diff_definitions(model)
    law = extraction.scaling_law(model, batch=run.cfg.batch, seed=run.cfg.seed)
    return SketchStats(
        rel_diff=float(np.median([s.rel_diff for s in sk])),
        rel_diff_by_definition={k: float(np.median(v)) for k, v in defs.items()},
        overlap=float(np.median([s.projector_overlap for s in sk])),
        gamma=float(law.gamma),
        reduction=reduction(run),
        worse=float(run.final["test_frac_worse_than_zero"]),
        zero_mse=float(run.baselines["zero_mse"]), train_loss=train_loss(run))


# ---------------------------------------------------------------------------------------------
# The heavy tail


@dataclass(frozen=True, eq=False)
class Tail:
    """Per held-out prompt (arrays of length N):

    ``mse``, ``zero``: the model's MSE on D and that of predicting zero; ``worse``: ``mse > zero`` (or not
    finite); ``norm_ratio``: the prompt's ‖A‖₂² (distributed: the largest machine block's; sketched: of
    A S₀ with the first layer's sketch) over the training batch maximum of the same quantity;
    ``kappa``: σ₁/σ_s of A (s the task's rank); ``step``: the largest step the first layer takes on the
    prompt, max(η₀, γ₀)·``norm_ratio`` with η₀, γ₀ the first layer's constants at the batch maximum
    (``eta0``, ``gamma0``): the C update (I − γ₀ ratio · AAᵀ/‖A‖₂²) overshoots its top direction when the
    step exceeds 2.  ``mse_rescaled``: the MSE when every prompt with ``norm_ratio`` > 1 is scaled by
    t = ``norm_ratio``^(−1/2) before the model and the prediction divided by t (exact for the target,
    since D = B A^† C is homogeneous of degree 1 in X): the batch-max normalisation the weights encode.
    ``peak_step``: the largest step over the layers 0..L−2 (whose A and C updates feed later layers),
    max(η_ℓ, γ_ℓ) · ‖A_ℓ‖₂² / (training batch max of ‖A_ℓ‖₂²) with the prompt's own activations A_ℓ;
    ``diverged``: the error exceeds :data:`DIVERGED` times that of predicting zero (or is not finite).
    """
    mse: np.ndarray
    zero: np.ndarray
    norm_ratio: np.ndarray
    kappa: np.ndarray
    step: np.ndarray
    eta0: float
    gamma0: float
    mse_rescaled: np.ndarray
    peak_step: np.ndarray | None = None

    @property
    def worse(self) -> np.ndarray:
        return ~(self.mse <= self.zero)            # NaN counts as worse

    @property
    def worse_rescaled(self) -> np.ndarray:
        return ~(self.mse_rescaled <= self.zero)

    @property
    def diverged(self) -> np.ndarray:
        return ~(self.mse <= DIVERGED * self.zero)

    def summary(self) -> dict[str, float]:
        """Medians, means and worse-than-zero shares, untouched and rescaled, and how well the step
        separates the prompts that fail: ``precision`` = share of prompts with step > 2 that are worse than
        zero, ``recall`` = share of the worse-than-zero prompts whose step exceeds 2."""
        over = self.step > 2
        fin = lambda x: float(np.mean(x)) if np.all(np.isfinite(x)) else float("inf")
        return {
            "median": float(np.median(np.where(np.isnan(self.mse), np.inf, self.mse))),
            "mean": fin(self.mse), "worse": float(self.worse.mean()),
            "median_rescaled": float(np.median(np.where(np.isnan(self.mse_rescaled), np.inf, self.mse_rescaled))),
            "mean_rescaled": fin(self.mse_rescaled), "worse_rescaled": float(self.worse_rescaled.mean()),
            "over": float(over.mean()),
            "precision": float(self.worse[over].mean()) if over.any() else float("nan"),
            "recall": float(over[self.worse].mean()) if self.worse.any() else float("nan"),
        } | self._diverged_summary()

    def _diverged_summary(self) -> dict[str, float]:
        """``diverged`` share; ``diverged_error_share``: their part of the summed error (NaN when it is not
        finite); ``peak_over_diverged`` / ``peak_over_rest``: share with a peak step above 2 among the
        diverged prompts / the others."""
        if self.peak_step is None:
            return {}
        dv, pk = self.diverged, self.peak_step > 2
        tot = float(np.sum(self.mse))
        return {"diverged": float(dv.mean()),
                "diverged_error_share": float(np.sum(self.mse[dv]) / tot) if np.isfinite(tot) and tot > 0 else float("nan"),
                "peak_over_diverged": float(pk[dv].mean()) if dv.any() else float("nan"),
                "peak_over_rest": float(pk[~dv].mean()) if (~dv).any() else float("nan")}


#: A prompt has *diverged* when its error exceeds this many times the error of predicting zero.
DIVERGED = 10.0


def _layer_norms(model: LinearTransformer, X_obs: torch.Tensor) -> np.ndarray:
    """(L, N): ‖A_ℓ‖₂² per layer and prompt as the layer sees it (max over machine blocks)."""
    nr = extraction.batch_norms(model, X_obs)
    return nr.reshape(nr.shape[0], nr.shape[1], -1).max(-1)


@torch.no_grad()
def _predict(model: LinearTransformer, X_obs: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    p = next(model.parameters())
    outs = [model(tasks.prompt(X_obs[i:i + chunk], model.task).to(device=p.device, dtype=p.dtype)).to("cpu", torch.float64)
            for i in range(0, X_obs.shape[0], chunk)]
    return torch.cat(outs)


def heavy_tail(run: Run, X_clean: torch.Tensor, X_obs: torch.Tensor) -> Tail:
    """:class:`Tail` of ``run`` on the held-out prompts ``X_obs`` (targets from ``X_clean``), in float64."""
    model = run.model(dtype=torch.float64)
    task = model.task
    X_clean, X_obs = X_clean.to(torch.float64), X_obs.to(torch.float64)
    law = extraction.scaling_law(model, batch=run.cfg.batch, seed=run.cfg.seed)
    mx0 = float(law.norm2_max[0])
    norms = _layer_norms(model, X_obs)
    ratio = norms[0] / mx0
    layer_steps = np.maximum(law.eta_layer, law.gamma_layer)[:, None] * norms / law.norm2_max[:, None]
    peak = layer_steps[:max(1, model.L - 1)].max(0)
    eta0, gamma0 = float(law.eta_layer[0]), float(law.gamma_layer[0])
    D = tasks.split(X_clean, task).D
    zero = D.square().mean((-1, -2)).numpy()
    mse = (_predict(model, X_obs) - D).square().mean((-1, -2)).numpy()
    t = torch.from_numpy(np.where(ratio > 1, 1.0 / np.sqrt(np.maximum(ratio, 1.0)), 1.0)).reshape(-1, 1, 1)
    mse_r = (_predict(model, X_obs * t) / t - D).square().mean((-1, -2)).numpy()
    A = tasks.split(X_obs, task).A
    sv = torch.linalg.svdvals(A).numpy()
    s = min(task.s, sv.shape[-1])
    kappa = sv[:, 0] / np.where(sv[:, s - 1] > 0, sv[:, s - 1], np.nan)
    return Tail(mse=mse, zero=zero, norm_ratio=ratio, kappa=kappa,
                step=max(eta0, gamma0) * ratio, eta0=eta0, gamma0=gamma0, mse_rescaled=mse_r,
                peak_step=peak)


def tail_prompts(cfg: TrainConfig, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``size`` held-out prompts for the tail analysis, from their own stream (seeded from ``cfg.seed``),
    disjoint from the training, validation and test streams."""
    s = int(np.random.SeedSequence([cfg.seed, 11]).generate_state(1)[0])
    return tasks.sample_X(cfg.task, size, generator=torch.Generator().manual_seed(s), dtype=torch.float64)


# ---------------------------------------------------------------------------------------------
# Training-side ablations


def with_noise(cfg: TrainConfig, noise_var: float) -> TrainConfig:
    """``cfg`` with noise of variance ``noise_var`` on every entry of X (the paper's σ²; validated)."""
    return config.apply_knobs(cfg, {"noise_var": noise_var})


def structure_stats(run: Run, X_obs: torch.Tensor | None = None) -> dict[str, Any]:
    """Structure, constants and fidelity of an unconstrained run (the noise ablation's statistics):
    ``offdiag_qk``, ``offdiag_vp`` (mean over layers of the mass off the paper's structure, chapter 4),
    ``eta``, ``gamma`` (batch-max constants), ``ab``, ``cd`` (per-layer α¹α², α¹α³), ``fidelity``
    (median over prompts of the last layer's squared error per entry, extracted iteration vs transformer;
    ``X_obs`` default: the run's test prompts) and ``reduction`` (chapter 3's headline statistic, :func:`reduction`)."""
    model = run.model(dtype=torch.float64)
    wp = extraction.weight_properties(model)
    law = extraction.scaling_law(model, batch=run.cfg.batch, seed=run.cfg.seed)
    if X_obs is None:
        X_obs = test_set(run.cfg)[1][:1024]
    fid = extraction.fidelity(model, X_obs, model.task)
    return {"offdiag_qk": float(np.mean([p.offdiag_mass for p in wp["qk"]])),
            "offdiag_vp": float(np.mean([p.offdiag_mass for p in wp["vp"]])),
            "eta": float(law.eta), "gamma": float(law.gamma), "ab": law.ab.copy(), "cd": law.cd.copy(),
            "fidelity": float(fid.median[-1]),
            "reduction": reduction(run)}
