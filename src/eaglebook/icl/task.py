"""The noisy in-context regression task of Vladymyrov et al. (2024), as a block-completion prompt.

Per sequence τ: w_τ ~ N(0, I_D), x_i ~ N(0, I_D) (i = 1..N, and the query x_q), y_i = ⟨w_τ, x_i⟩ + ξ_i with
ξ_i ~ N(0, σ_τ²), and a noiseless query label y_q = ⟨w_τ, x_q⟩.  The noise level is drawn per sequence:
σ_τ ~ U(0, σ_max) (``noise="uniform"``; σ_max = 0 is the noiseless task) or uniformly from a finite set
(``noise="categorical"``, e.g. {1, 3}).

**The block-completion frame.**  The prompt is Z = [[A, C], [B, D]] with A = Xᵀ (D×N: the context inputs
as columns), C = x_q (D×1), B = yᵀ (1×N), D = 0 (1×1, the unknown).  The target of the book's task,
B A^† C = yᵀ X (XᵀX)⁻¹ x_q, is least squares; ridge is B Aᵀ(AAᵀ + λI)⁻¹ C.  Their tokens
e_i = (x_i, y_i) ∈ R^{D+1} are the *columns* of Z (the query token (x_q, 0) is the last one); the paper's
tokens are its rows.  Shapes: D + 1 = 11 rows, N + 1 = 21 columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from ..config import TrainConfig, check_float, check_int, choice, neutral

__all__ = ["ICLTask", "ICLModel", "ICLTrain", "Batch", "sample", "prompt", "blocks", "KINDS", "NOISES", "DTYPES"]

KINDS = ("full", "diag", "gdpp")
NOISES = ("uniform", "categorical")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class ICLTask:
    """N context examples in D dimensions; the per-sequence noise law (see the module docstring)."""

    N: int = 20
    D: int = 10
    noise: str = "uniform"
    sigma_max: float = 0.0                 # uniform: σ_τ ~ U(0, sigma_max)
    levels: tuple[float, ...] = ()         # categorical: σ_τ uniform over these

    def __post_init__(self):
        check_int("N", self.N, minimum=1)
        check_int("D", self.D, minimum=1)
        choice("noise", self.noise, NOISES)
        check_float("sigma_max", self.sigma_max, lower_open=False, upper_closed=False,
                    allowed="finite numbers >= 0")
        object.__setattr__(self, "levels", tuple(float(v) for v in self.levels))
        if self.noise == "categorical":
            if not self.levels:
                raise ValueError("parameter levels=() is not valid for noise='categorical'; give the noise levels")
            for v in self.levels:
                check_float("levels", v, lower_open=False, upper_closed=False, allowed="finite numbers >= 0")
        elif self.levels:
            raise ValueError(f"parameter levels={self.levels!r} is only read with noise='categorical'")

    @property
    def label(self) -> str:
        """σ_max = 5, or σ ∈ {1, 3}."""
        if self.noise == "categorical":
            return "σ ∈ {" + ", ".join(f"{v:g}" for v in self.levels) + "}"
        return f"σ_max = {self.sigma_max:g}"


@dataclass(frozen=True)
class ICLModel:
    """A single-head linear transformer over the tokens (x_i, y_i): ``kind`` FULL, DIAG or GD++."""

    kind: str = "diag"
    layers: int = 1
    init_std: float = 0.02

    def __post_init__(self):
        choice("kind", self.kind, KINDS)
        check_int("layers", self.layers, minimum=1)
        check_float("init_std", self.init_std, upper_closed=False, allowed="finite numbers > 0")


@dataclass(frozen=True)
class ICLTrain(TrainConfig):
    """Everything that determines a trained model (its hash is the cache key): the shared recipe's config
    (:class:`eaglebook.config.TrainConfig`: steps, batch, Adam's ``lr``, global gradient-norm clipping at
    ``clip``, the held-out set, skipping non-finite steps) for this task and these models, with two fields of
    its own.

    The learning rate decays from ``lr`` to ``lr * lr_final`` on a cosine over ``steps``, after ``warmup``
    linear steps; the loss is ½(ŷ − y_q)² (their convention).  ``keep_best``: return the weights with the
    lowest held-out loss among the evaluations (at step 0, every ``eval_every`` steps and at the end) instead
    of the last ones: a guard against the late loss spikes of DIAG and FULL (the held-out sequences are the
    training run's own, never the chapter's evaluation sequences).

    Hash-neutral: ``keep_best`` while off, and ``skip_nonfinite`` (always on here), so that every config kept
    the cache key it had before this class extended :class:`~eaglebook.config.TrainConfig`.  The optimiser is
    Adam (``optimizer="adam"``): the shared recipe's SGD is not offered here."""

    task: ICLTask = field(default_factory=ICLTask)
    model: ICLModel = field(default_factory=ICLModel)
    steps: int = 3000
    batch: int = 2048
    clip: float = 1.0
    eval_size: int = 10_000
    eval_every: int = 100
    skip_nonfinite: bool = neutral(True)
    lr_final: float = 0.01
    warmup: int = 100
    keep_best: bool = neutral(False)

    def check_setup(self) -> None:
        if not isinstance(self.task, ICLTask):
            raise ValueError(f"parameter task must be an ICLTask, got {type(self.task).__name__}")
        if not isinstance(self.model, ICLModel):
            raise ValueError(f"parameter model must be an ICLModel, got {type(self.model).__name__}")
        check_float("lr_final", self.lr_final, lower_open=False, upper=1.0, allowed="0 <= lr_final <= 1")
        check_int("warmup", self.warmup, minimum=0)
        check_int("eval_size", self.eval_size, minimum=1)
        check_int("eval_every", self.eval_every, minimum=1)
        choice("optimizer", self.optimizer, ("adam",))


class Batch(NamedTuple):
    """One batch of sequences: context x (B, N, D), y (B, N); query x_q (B, D), its clean label y_q (B,);
    the noise level σ_τ (B,) and the weights w (B, D)."""

    x: torch.Tensor
    y: torch.Tensor
    xq: torch.Tensor
    yq: torch.Tensor
    sigma: torch.Tensor
    w: torch.Tensor


def _sigmas(task: ICLTask, batch: int, generator: torch.Generator, dtype) -> torch.Tensor:
    if task.noise == "categorical":
        lv = torch.tensor(task.levels, dtype=dtype)
        return lv[torch.randint(len(lv), (batch,), generator=generator)]
    return task.sigma_max * torch.rand(batch, generator=generator, dtype=dtype)


def sample(task: ICLTask, batch: int, generator: torch.Generator, *, dtype=torch.float32,
           sigma: float | None = None) -> Batch:
    """``batch`` sequences of ``task``; ``sigma`` fixes σ_τ for all of them (the shrinkage figure)."""
    check_int("batch", batch, minimum=1)
    if isinstance(dtype, str):
        dtype = DTYPES[choice("dtype", dtype, tuple(DTYPES))]
    N, D = task.N, task.D
    w = torch.randn(batch, D, generator=generator, dtype=dtype)
    x = torch.randn(batch, N + 1, D, generator=generator, dtype=dtype)
    if sigma is None:
        s = _sigmas(task, batch, generator, dtype)
    else:
        s = torch.full((batch,), check_float("sigma", sigma, lower_open=False, upper_closed=False,
                                             allowed="finite numbers >= 0"), dtype=dtype)
    clean = torch.einsum("bnd,bd->bn", x, w)
    y = clean[:, :N] + s[:, None] * torch.randn(batch, N, generator=generator, dtype=dtype)
    return Batch(x[:, :N], y, x[:, N], clean[:, N], s, w)


def prompt(b: Batch) -> torch.Tensor:
    """Z = [[Xᵀ, x_q], [yᵀ, 0]] of shape (B, D + 1, N + 1) (see the module docstring)."""
    B, N, D = b.x.shape
    Z = b.x.new_zeros(B, D + 1, N + 1)
    Z[:, :D, :N] = b.x.mT
    Z[:, :D, N] = b.xq
    Z[:, D, :N] = b.y
    return Z


def blocks(Z: torch.Tensor):
    """(A, B, C, D) of a prompt or an iterate Z of shape (…, D + 1, N + 1)."""
    if Z.ndim < 2 or Z.shape[-1] < 2 or Z.shape[-2] < 2:
        raise ValueError(f"argument Z of shape {tuple(Z.shape)} is not a prompt (…, D + 1, N + 1)")
    return Z[..., :-1, :-1], Z[..., -1:, :-1], Z[..., :-1, -1:], Z[..., -1:, -1:]
