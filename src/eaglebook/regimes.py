"""The compute regimes (the paper's §3 and App. B.4) as objects, and their registry.

A regime says what the weights of the linear transformer may do.  Everything that differs from one
regime to the next lives in its class here, and nowhere else; the rest of the package asks the
regime (``regimes.get(name)``) instead of comparing its name:

* its **layout**: the parameter shapes, the number of heads, the feature blocks of the model's own
  ("raw") layout (:meth:`Regime.layout`), and which settings of the model it reads (:attr:`Regime.uses`);
* the model's **embedding and read-out**, and the regime's part of the layer (:meth:`Regime.state`,
  :meth:`Regime.add_update`, :meth:`Regime.prediction`, ...), used by :class:`eaglebook.models.LinearTransformer`;
* the **hand-set diagonal weights** of one layer (:meth:`Regime.set_diagonal_layer`);
* extraction's **product normalisation** (:meth:`Regime.check_products`, :meth:`Regime.map_vp`,
  :meth:`Regime.forward_products`) and **scalar read-out** (:meth:`Regime.alphas`, :meth:`Regime.norm_blocks`);
* the **EAGLE variant** it maps to (:attr:`Regime.variant`) and the per-layer iteration read out of its
  weights (:meth:`Regime.iterate`);
* its **paper values** (:attr:`Regime.paper`), its label and its **plot style** (:attr:`Regime.style`).

The registry holds the paper's three regimes (:data:`PAPER`, in the paper's order); :func:`register`
adds another (a test defines a toy regime that way), :func:`get` looks one up and names the registered
ones when the name is unknown.  The paper's other names, ``centralized`` and ``compute-limited``, are
aliases.

The module depends only on the array layer and the solver's UPDATE, so that the configuration
(``eaglebook.config``) can validate a regime's settings and the model, the extraction and the chapters
can all use the same objects.  Its methods take the model (or products, tensors) as arguments and keep no
state of their own.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from ._arrays import common_layout, from_machines, machine_blocks, machine_edges, to_machines
from .solver.update import combine, step, update

__all__ = ["Layout", "PaperComparison", "Regime", "Unconstrained", "Sketched", "Distributed", "PAPER",
           "register", "unregister", "get", "names", "canonical", "top_projector"]


@dataclass(frozen=True)
class Layout:
    """How a regime lays out one model.

    ``shapes``: parameter name → shape ``(L, heads or parts, rows, cols)``; ``heads``: attention heads;
    ``blocks``: feature blocks of the raw layout (distributed: one per machine, else 1); ``block``:
    features per block (F_μ = n_μ + n', else n + n'); ``data``: data columns per block (n_μ, else n).
    """

    shapes: dict[str, tuple[int, ...]]
    heads: int
    blocks: int
    block: int
    data: int

    @property
    def features(self) -> int:
        """Feature columns of the raw layout."""
        return self.blocks * self.block


@dataclass(frozen=True)
class PaperComparison:
    """A regime-specific paper comparison of chapter 4, as plain data: ``criterion`` is
    ``(name of a eaglebook.report criterion, positional arguments, keyword arguments)``."""

    key: str
    what: str
    criterion: tuple[str, tuple, dict]
    robustness: str
    paper: float | None = None
    paper_text: str | None = None
    claim: str | None = None      # the paper claim it is the headline of (eaglebook.claims)


def _eye(k: int) -> torch.Tensor:
    # float64, so that sqrt(|a1|) etc. are not rounded before the copy into the parameter
    return torch.eye(k, dtype=torch.float64)


def top_projector(Q: np.ndarray, r: int) -> np.ndarray:
    """n×r orthonormal basis of the top-r eigenvectors (by |eigenvalue|) of the symmetrised ``Q``."""
    Qs = (Q + Q.T) / 2
    ev, U = np.linalg.eigh(Qs)
    idx = np.argsort(-np.abs(ev), kind="stable")[:r]
    return U[:, np.sort(idx)]


def _md(w: np.ndarray, lo, hi) -> float:
    """Mean of the diagonal of ``w`` over ``lo:hi``."""
    return float(np.diag(w)[lo:hi].mean())


class Regime:
    """A compute regime: the base class is the one-block layout shared by the unconstrained and sketched
    regimes (and by any regime that does not override it): H heads over the n + n' features, the
    prediction read from the D block, no feature blocks.  Subclasses set the class attributes and
    override what differs."""

    #: The registry key and the name in the book; the paper's other names.
    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    #: Short description for prose and tables.
    label: ClassVar[str] = ""
    #: The ModelConfig fields this regime reads besides ``layers`` and ``init_std`` (other fields keep
    #: their defaults in its configs, so that a setting it does not read does not change its cache key).
    uses: ClassVar[frozenset[str]] = frozenset()
    #: The EAGLE variant it maps to (chapter 5): "centralized", "sketched" or "distributed".
    variant: ClassVar[str] = "centralized"
    #: Capabilities the extraction asks about.
    refactorable: ClassVar[bool] = True      # products can be written back as weights (quantisation)
    prunable: ClassVar[bool] = False         # heads are independent (head ablation, pruning)
    sketched: ClassVar[bool] = False         # the data blocks are rank-r sketch projectors
    heads_share_weights: ClassVar[bool] = False   # every head is one shared block (no per-head products)
    #: Paper values: whether the paper quantises this regime (chapter 4), the regime-specific comparison of
    #: chapter 4 (or None), and the Tolerances field of the beats-zero check of chapter 3.
    quantized_in_paper: ClassVar[bool] = False
    #: Whether the paper states the scaling law's η ≈ 1, γ ≈ 1.9 for this regime (App. B.5: the unconstrained
    #: model); elsewhere chapter 4's η, γ rows are evidence, not the claims' headlines.
    scaling_law_in_paper: ClassVar[bool] = False
    #: γ of Algorithm 1's averaged update, from a layer's own-head and other-heads γ and the machine count
    #: (None: the regime has no other heads, its γ is the update's).
    def gamma_of_average(self, gamma_layer, gamma_other_layer, machines: int):
        return None
    special: ClassVar[PaperComparison | None] = None
    beats_zero_tolerance: ClassVar[str] = "beats_zero_factor"
    #: Plot style (matplotlib line keywords), and the label of a layer's W_VP as :meth:`vp_parts` shows it.
    style: ClassVar[dict] = {}
    vp_label: ClassVar[str] = "$W_{VP}$"
    #: The squared norm whose batch maximum sets a layer's scale (:meth:`norm_blocks`), and what it is, for prose.
    norm_label: ClassVar[str] = "‖A_ℓ‖²"
    norm_note: ClassVar[str] = ""

    def __repr__(self) -> str:
        return f"<regime {self.name}>"

    # ----------------------------------------------------------------------------------- layout
    def validate(self, model_cfg, task) -> None:
        """Raise ``ValueError`` naming the setting when ``model_cfg`` cannot be built on ``task``."""

    def layout(self, model_cfg, task) -> Layout:
        """Parameter shapes and feature blocks (default: H heads, each (n+n') × (n+n'))."""
        L, F = model_cfg.layers, task.n + task.n_prime
        H = self.n_heads(model_cfg)
        shapes = {k: (L, H, F, F) for k in ("W_Q", "W_K", "W_V", "W_P")}
        return Layout(shapes=shapes, heads=H, blocks=1, block=F, data=task.n)

    def n_heads(self, model_cfg) -> int:
        return 1

    # ------------------------------------------------------------------ the model: layouts and layer
    def embed(self, model, Z0: torch.Tensor) -> torch.Tensor:
        """(batch, d+d', n+n') prompt → the raw layout."""
        return Z0

    def unembed(self, model, Z: torch.Tensor) -> torch.Tensor:
        """Raw layout → common (d+d') × (n+n') layout."""
        return Z

    def readout(self, model, Z: torch.Tensor) -> torch.Tensor:
        """The prediction −D_L (batch, d', n') from a raw-layout activation."""
        return -Z[..., model.task.d:, model.task.n:]

    def prompt_state(self, model, Z0: torch.Tensor) -> torch.Tensor:
        """What the layers of the forward pass run on, from the prompt (common layout)."""
        return Z0

    def state(self, model, Z: torch.Tensor) -> torch.Tensor:
        """What the layers run on, from the raw layout (or from :meth:`prompt_state`'s result)."""
        return Z

    def layer_weights(self, wqk: torch.Tensor, wvp: torch.Tensor):
        """Per-layer (query weight, value weight) for the layer kernels: ``qcat[l]`` = [W_QK^1 | … | W_QK^H]
        (F, H·F) and ``vstack[l]`` = [W_VP^1; …; W_VP^H] (H·F, F)."""
        L, H, F = wqk.shape[0], wqk.shape[1], wqk.shape[2]
        return wqk.transpose(1, 2).reshape(L, F, H * F), wvp.reshape(L, H * F, F)

    def attend(self, model, attention, Z, wq, q0: int):
        """Every head's attention output O (from :func:`eaglebook.models._attention`), queries q0..T-1."""
        return attention(Z, wq, model.task.d, q0)

    def add_update(self, model, Z, O, wv):
        """Z_{ℓ+1} = Z_ℓ + Σ_h O^h W_VP^h."""
        return Z + O @ wv

    def last_update(self, model, Z, O, wv):
        """The last layer's D block only (O holds the d' query rows)."""
        d, n = model.task.d, model.task.n
        return Z[:, d:, n:] + O @ wv[:, n:]

    def raw(self, model, Z):
        """A layer state → the raw layout."""
        return Z

    def prediction(self, D: torch.Tensor) -> torch.Tensor:
        """−D_L from the last layer's D block(s)."""
        return -D

    def vp(self, W_V, W_P, head):
        """One layer's W_VP from its W_V, W_P (L-sliced): Σ_h, or head ``head``'s."""
        w = W_V @ W_P.transpose(-1, -2)
        return w.sum(0) if head is None else w[head]

    def heads_qk(self, model, layer: int) -> torch.Tensor:
        """Every head's W_QK in the raw layout: (heads, features, features)."""
        return model.W_Q[layer] @ model.W_K[layer].transpose(-1, -2)

    def heads_vp(self, model, layer: int) -> torch.Tensor:
        """Every head's W_VP in the raw layout: (heads, features, features)."""
        return model.W_V[layer] @ model.W_P[layer].transpose(-1, -2)

    def set_diagonal_layer(self, model, l: int, a1: float, a2: float, a3: float, *, sketch=None, other=None) -> None:
        """Hand-set layer ``l`` (parameters already zero): W_QK = diag(a₁I_n, 0), W_VP = diag(a₂I_n, a₃I_{n'})
        carried by head 0."""
        n, np_ = model.task.n, model.task.n_prime
        c, sg = math.sqrt(abs(a1)), (1.0 if a1 >= 0 else -1.0)
        F = n + np_
        model.W_Q[l, 0] = c * _eye(F)
        model.W_K[l, 0, :n, :n] = sg * c * _eye(n)
        model.W_V[l, 0] = _eye(F)
        model.W_P[l, 0] = torch.diag(torch.tensor([a2] * n + [a3] * np_, dtype=torch.float64))

    # ------------------------------------------------------------------ extraction: products
    def data_size(self, model) -> int:
        """Data columns of one block of the products (n_μ, else n)."""
        return model.task.n

    def check_products(self, qs: list[np.ndarray], vs: list[np.ndarray], task) -> int:
        """Check per-layer (H, F, F) products; return the number of feature blocks."""
        F = task.n + task.n_prime
        for l, (q, v) in enumerate(zip(qs, vs)):
            if q.ndim != 3 or q.shape[1:] != (F, F) or v.shape != q.shape:
                raise ValueError(f"argument wqk/wvp layer {l}: expected (heads, {F}, {F}) for both, got {q.shape} and {v.shape}")
        return 1

    def forward_products(self, qs, vs, Z: torch.Tensor, task, blocks: int) -> list[torch.Tensor]:
        """Z_0..Z_L (common layout) of the layers given by their products (float64 tensors)."""
        d = task.d
        acts = [Z]
        for q, v in zip(qs, vs):
            Zk = Z[:, :d]
            G = Zk.transpose(1, 2) @ Zk
            upd = sum((Z @ q[h]) @ G @ v[h] for h in range(q.shape[0]))
            Z = Z + upd
            acts.append(Z)
        return acts

    def map_vp(self, wvp: np.ndarray, f_vp) -> np.ndarray:
        """``f_vp`` applied to every W_VP matrix (per head)."""
        return np.stack([[f_vp(v) for v in layer] for layer in wvp])

    def vp_parts(self, wvp_l: np.ndarray) -> dict[str, np.ndarray]:
        """One layer's W_VP products to test against the paper's structure (``"vp"``: Σ_h W_VP^h)."""
        return {"vp": wvp_l.sum(0)}

    def projectors(self, wqk: np.ndarray, model) -> np.ndarray | None:
        """(L, n, n) effective sketch projectors of the layers, or None (no sketch)."""
        return None

    def align_layer(self, wqk_l: np.ndarray, wvp_l: np.ndarray, n: int, P_l) -> None:
        """Negate (in place) each head's (W_QK, W_VP) whose data-block α¹ is negative (Fig. 12)."""
        for h in range(wqk_l.shape[0]):
            a = np.sum(wqk_l[h, :n, :n] * P_l) if P_l is not None else np.diag(wqk_l[h])[:n].mean()
            if a < 0:
                wqk_l[h] *= -1
                wvp_l[h] *= -1

    # ------------------------------------------------------------------ extraction: scalars
    def alphas(self, wqk: np.ndarray, wvp: np.ndarray, model) -> dict[str, Any]:
        """Per-layer α¹, α², α³, c_AB, c_CD (and regime extras) from the products; see
        :class:`eaglebook.extraction.Alphas`.  Multi-head: Σ_h of the per-head products."""
        L, n = model.L, self.data_size(model)
        a1 = np.array([_md(wqk[l].sum(0), 0, n) for l in range(L)])
        a2 = np.array([_md(wvp[l].sum(0), 0, n) for l in range(L)])
        a3 = np.array([_md(wvp[l].sum(0), n, None) for l in range(L)])
        h1 = np.array([[_md(q, 0, n) for q in wqk[l]] for l in range(L)])
        h2 = np.array([[_md(v, 0, n) for v in wvp[l]] for l in range(L)])
        h3 = np.array([[_md(v, n, None) for v in wvp[l]] for l in range(L)])
        return dict(a1=a1, a2=a2, a3=a3, ab=(h1 * h2).sum(1), cd=(h1 * h3).sum(1))

    def align_extra(self, extra: dict, s: np.ndarray, a1: np.ndarray) -> None:
        """Apply the sign alignment ``s`` to the regime's extra scalars (in place)."""

    def norm_blocks(self, model, A: torch.Tensor, l: int, sketches) -> torch.Tensor:
        """The A blocks whose ‖·‖₂² set the layer's scale (batch, ...): A itself."""
        return A

    def sketches(self, wqk: np.ndarray, model):
        """Per-layer sketch S_ℓ (n × r tensors, from the float64 products ``wqk``) for :meth:`norm_blocks`, or None."""
        return None

    # ------------------------------------------------------------------ the extracted iteration (EAGLE)
    def iterate(self, model, A, B, C, D, al) -> list[tuple]:
        """The iterates (A, B, C, D)_0..L of the extracted per-layer iteration with the layers'
        coefficients ``al`` (:class:`eaglebook.extraction.Alphas`), raw-transformer D sign."""
        out = [(A, B, C, D)]
        for c_ab, c_cd in zip(al.ab, al.cd):
            A, B, C, D = update(A, B, C, D, -float(c_ab), -float(c_cd), d_scale=-1.0)
            out.append((A, B, C, D))
        return out


class Unconstrained(Regime):
    """H free heads, W_Q, W_K, W_V, W_P each (n+n') × (n+n') (the paper trains 8 heads and prunes to 1)."""

    name = "unconstrained"
    aliases = ("centralized",)
    label = "unconstrained"
    uses = frozenset({"heads"})
    variant = "centralized"
    prunable = True
    quantized_in_paper = True
    scaling_law_in_paper = True
    style = dict(color="#0072B2", linestyle="-")

    def n_heads(self, model_cfg) -> int:
        return model_cfg.heads


class Sketched(Regime):
    """Compute-limited: one head, W_Q, W_K (n+n') × r (r = ``model_cfg.r``), W_V, W_P (n+n') × k with
    k = r + n' (the paper's App. B.4 as written) unless ``model_cfg.vp_width`` sets k (an ablation)."""

    name = "sketched"
    aliases = ("compute-limited",)
    label = "sketched"
    uses = frozenset({"r", "vp_width"})
    variant = "sketched"
    refactorable = False
    sketched = True
    beats_zero_tolerance = "beats_zero_sketched"
    norm_label = "‖A_ℓS_ℓ‖²"
    norm_note = "the sketched data's norm, with the layer's sketch S_ℓ"
    special = PaperComparison(
        "C4_sketched_rel_diff", "relative difference of the normalised W_QK and ±W_VP data blocks (seed 0, median over layers)",
        ("within_factor", (2,), {"partly": 4}), "a property of the weights, median over layers", paper=0.28,
        claim="sketch-rel-diff")
    style = dict(color="#009E73", linestyle="-.")

    def validate(self, model_cfg, task) -> None:
        if model_cfg.r > task.n:
            raise ValueError(f"parameter r={model_cfg.r} is not valid; allowed values: integers in 1..n = {task.n} "
                             "(the sketch keeps r of the n data columns)")

    def layout(self, model_cfg, task) -> Layout:
        L, F, r = model_cfg.layers, task.n + task.n_prime, model_cfg.r
        k = model_cfg.vp_width or r + task.n_prime
        shapes = {"W_Q": (L, 1, F, r), "W_K": (L, 1, F, r), "W_V": (L, 1, F, k), "W_P": (L, 1, F, k)}
        return Layout(shapes=shapes, heads=1, blocks=1, block=F, data=task.n)

    def set_diagonal_layer(self, model, l, a1, a2, a3, *, sketch=None, other=None) -> None:
        """W_QK = a₁ S Sᵀ ⊕ 0 and W_VP = a₂ S Sᵀ ⊕ a₃ I with S = ``sketch`` (see :meth:`sketch_matrix`)."""
        n, np_, r = model.task.n, model.task.n_prime, model.cfg.r
        if model.W_V.shape[-1] < r + np_:
            raise ValueError(f"the reference layer needs W_V, W_P with at least r + n' = {r + np_} columns; "
                             f"this model has vp_width={model.W_V.shape[-1]}")
        c, sg = math.sqrt(abs(a1)), (1.0 if a1 >= 0 else -1.0)
        S = self.sketch_matrix(model, sketch)
        model.W_Q[l, 0, :n, :] = c * S
        model.W_K[l, 0, :n, :] = sg * c * S
        model.W_V[l, 0, :n, :r] = S
        model.W_V[l, 0, n:, r:] = _eye(np_)
        model.W_P[l, 0, :n, :r] = a2 * S
        model.W_P[l, 0, n:, r:] = a3 * _eye(np_)

    @staticmethod
    def sketch_matrix(model, s) -> torch.Tensor:
        """An n × r sketch from ``s``: an n × r matrix, or r distinct column indices (a column selection);
        None: the first r coordinates."""
        n, r = model.task.n, model.cfg.r
        if s is None:
            s = list(range(r))
        t = torch.as_tensor(np.asarray(s), dtype=torch.float64)
        if t.dim() == 1:
            idx = [int(i) for i in np.asarray(s)]
            if len(idx) != r or len(set(idx)) != r or not all(0 <= i < n for i in idx):
                raise ValueError(f"sketch indices {idx} must be {r} distinct column indices in 0..{n - 1}")
            S = torch.zeros(n, r, dtype=torch.float64)
            S[idx, torch.arange(r)] = 1.0
            return S
        if tuple(t.shape) != (n, r):
            raise ValueError(f"sketch has shape {tuple(t.shape)}, expected (n, r) = ({n}, {r})")
        return t

    def projectors(self, wqk: np.ndarray, model) -> np.ndarray:
        n, r = model.task.n, model.cfg.r
        out = []
        for l in range(model.L):
            S = top_projector(wqk[l, 0, :n, :n], r)
            out.append(S @ S.T)
        return np.asarray(out)

    def alphas(self, wqk, wvp, model) -> dict[str, Any]:
        """Least-squares scales a = tr(W_data P)/r against the layer's projector P (:meth:`projectors`)."""
        L, n, r = model.L, model.task.n, model.cfg.r
        P = self.projectors(wqk, model)
        a1 = np.array([np.sum(wqk[l, 0, :n, :n] * P[l]) / r for l in range(L)])
        a2 = np.array([np.sum(wvp[l, 0, :n, :n] * P[l]) / r for l in range(L)])
        a3 = np.array([_md(wvp[l, 0], n, None) for l in range(L)])
        return dict(a1=a1, a2=a2, a3=a3, ab=a1 * a2, cd=a1 * a3, P=P)

    def sketches(self, wqk, model):
        n, r = model.task.n, model.cfg.r
        return [torch.from_numpy(top_projector(wqk[l, 0, :n, :n], r)) for l in range(model.L)]

    def norm_blocks(self, model, A, l, sketches):
        """‖A_ℓ S_ℓ‖₂² with the layer's effective sketch S_ℓ."""
        return A @ sketches[l]

    def iterate(self, model, A, B, C, D, al):
        """The layer's projector P_ℓ = S_ℓ S_ℓᵀ as the sketch."""
        out = [(A, B, C, D)]
        for l in range(model.L):
            P = torch.from_numpy(np.asarray(al.P[l], dtype=np.float64))
            A, B, C, D = update(A, B, C, D, -float(al.ab[l]), -float(al.cd[l]), S=P, d_scale=-1.0)
            out.append((A, B, C, D))
        return out


class Distributed(Regime):
    """M = ``model_cfg.machines`` machines, one head each (the paper's Fig. 2 and App. B.4).

    The n data columns are split contiguously; **M must divide n** (the weights are shared across
    machines, which needs equal blocks).  With n_μ = n/M and F_μ = n_μ + n', machine μ holds the block
    [[A^μ, C], [B^μ, D]], and the raw layout concatenates the blocks along the features (machine-major,
    n + M·n' columns).  Head μ attends within block μ (one W_Q, W_K, W_V shared by all heads) and writes
    to every block through a two-part projection: ``W_P[:, 0]`` (self) and ``W_P[:, 1]`` (other), so block
    ν receives O_ν W_self + Σ_{μ≠ν} O_μ W_other.  The read-out averages the M copies of D.
    """

    name = "distributed"
    label = "distributed"
    uses = frozenset({"machines"})
    variant = "distributed"
    heads_share_weights = True
    quantized_in_paper = True
    vp_label = "$W_{VP}$ self | other"
    norm_label = "‖A^μ_ℓ‖²"
    norm_note = "over the prompts and the machines' blocks A^μ_ℓ"
    special = PaperComparison(
        "C4_distributed_cross_query", "share of the cross-machine projection in the C, D (query) block",
        ("at_least", (0.9,), {"partly": 0.7}), "a share of a weight norm, in [0, 1], averaged over layers",
        paper_text="≈ 1 (only C, D cross)", claim="cross-machine")

    def gamma_of_average(self, gamma_layer, gamma_other_layer, machines: int):
        """Algorithm 1 averages the machines' updates: each copy of C, D gets its own head's step and the
        M − 1 others' (chapter 2: α³ = γ/M per head), so its γ is their sum."""
        return gamma_layer + (machines - 1) * gamma_other_layer
    style = dict(color="#E69F00", linestyle="--")

    def validate(self, model_cfg, task) -> None:
        M, n = model_cfg.machines, task.n
        if not (1 <= M <= n) or n % M:
            divisors = ", ".join(str(k) for k in range(1, n + 1) if n % k == 0)
            raise ValueError(f"parameter machines={M} is not valid for n={n}: the distributed model shares weights "
                             f"across machines and needs equal blocks, so machines must divide n (allowed: {divisors})")

    def layout(self, model_cfg, task) -> Layout:
        self.validate(model_cfg, task)
        M, n, L = model_cfg.machines, task.n, model_cfg.layers
        edges = machine_edges(n, M)
        if not np.array_equal(np.diff(edges), np.full(M, n // M)):   # the layout assumes it
            raise ValueError("the contiguous split of the data columns is not an equal split")
        Fm = n // M + task.n_prime
        shapes = {"W_Q": (L, 1, Fm, Fm), "W_K": (L, 1, Fm, Fm), "W_V": (L, 1, Fm, Fm), "W_P": (L, 2, Fm, Fm)}
        return Layout(shapes=shapes, heads=M, blocks=M, block=Fm, data=n // M)

    # raw layout (…, T, M·F_μ) ↔ machine blocks (…, M, T, F_μ)
    @staticmethod
    def _raw(Zm: torch.Tensor) -> torch.Tensor:
        B, Mm, T, Fm = Zm.shape
        return Zm.transpose(1, 2).reshape(B, T, Mm * Fm)

    @staticmethod
    def _blocks(model, Z: torch.Tensor) -> torch.Tensor:
        return Z.reshape(*Z.shape[:-1], model.machines, model.F_mu).transpose(-3, -2)

    def embed(self, model, Z0):
        return self._raw(machine_blocks(Z0, model.machines, model.task.n))

    def unembed(self, model, Z):
        return common_layout(self._blocks(model, Z), model.n_mu)

    def readout(self, model, Z):
        return -self._blocks(model, Z)[..., model.task.d:, model.n_mu:].mean(-3)

    def prompt_state(self, model, Z0):
        return machine_blocks(Z0, model.machines, model.task.n)           # (B, M, T, F_μ)

    def state(self, model, Z):
        return self._blocks(model, Z).contiguous() if Z.dim() == 3 else Z   # raw layout → (B, M, T, F_μ)

    def layer_weights(self, wqk, wvp):
        """The shared W_QK (F_μ, F_μ) and, per layer, the pair (W_self − W_other, W_other)."""
        wd, wo = wvp[:, 0] - wvp[:, 1], wvp[:, 1]
        return wqk[:, 0], [(wd[l], wo[l]) for l in range(wd.shape[0])]

    def attend(self, model, attention, Z, wq, q0):
        B, Mm, T, Fm = Z.shape
        O = attention(Z.view(B * Mm, T, Fm), wq, model.task.d, q0)
        return O.view(B, Mm, -1, Fm)                                     # head μ's output, from block μ only

    def add_update(self, model, Z, O, wv):
        wd, wo = wv
        return Z + O @ wd + O.sum(1, keepdim=True) @ wo

    def last_update(self, model, Z, O, wv):
        wd, wo = wv
        d, nm = model.task.d, model.n_mu                                 # block ν gets O_ν W_self + Σ_{μ≠ν} O_μ W_other
        return Z[:, :, d:, nm:] + O @ wd[:, nm:] + O.sum(1, keepdim=True) @ wo[:, nm:]

    def raw(self, model, Z):
        return self._raw(Z)

    def prediction(self, D):
        return -(D.mean(1))

    def vp(self, W_V, W_P, head):
        """A (2, F_μ, F_μ) tensor, [self block, other block] (``head`` is ignored)."""
        return W_V @ W_P.transpose(-1, -2)

    def heads_qk(self, model, layer):
        Mm, Fm = model.machines, model.F_mu
        out = model.W_Q.new_zeros(Mm, Mm * Fm, Mm * Fm)
        blk = model.qk(layer)
        for mu in range(Mm):
            out[mu, mu * Fm:(mu + 1) * Fm, mu * Fm:(mu + 1) * Fm] = blk
        return out

    def heads_vp(self, model, layer):
        """Head μ's rows are block μ (it reads its own block); its column block μ is the self part, every
        other column block the other part."""
        Mm, Fm = model.machines, model.F_mu
        s, o = model.vp(layer)
        out = model.W_Q.new_zeros(Mm, Mm * Fm, Mm * Fm)
        for mu in range(Mm):
            for nu in range(Mm):
                out[mu, mu * Fm:(mu + 1) * Fm, nu * Fm:(nu + 1) * Fm] = s if mu == nu else o
        return out

    def set_diagonal_layer(self, model, l, a1, a2, a3, *, sketch=None, other=None) -> None:
        """Shared block W_QK = diag(a₁I_{n_μ}, 0), self part W_VP = diag(a₂I, a₃I), other part diag(0, b I)
        with b = ``other`` (default a₃)."""
        nm, Fm, np_ = model.n_mu, model.F_mu, model.task.n_prime
        c, sg = math.sqrt(abs(a1)), (1.0 if a1 >= 0 else -1.0)
        b = a3 if other is None else float(other)
        model.W_Q[l, 0] = c * _eye(Fm)
        model.W_K[l, 0, :nm, :nm] = sg * c * _eye(nm)
        model.W_V[l, 0] = _eye(Fm)
        model.W_P[l, 0] = torch.diag(torch.tensor([a2] * nm + [a3] * np_, dtype=torch.float64))
        model.W_P[l, 1] = torch.diag(torch.tensor([0.0] * nm + [b] * np_, dtype=torch.float64))

    def data_size(self, model) -> int:
        return model.n_mu

    def check_products(self, qs, vs, task) -> int:
        n, np_ = task.n, task.n_prime
        Fm = qs[0].shape[-1]
        nm = Fm - np_
        if nm < 1 or n % nm:
            raise ValueError(f"argument wqk has blocks of size {Fm}, which is not n_μ + n' for an n_μ dividing n={n}")
        for l, (q, v) in enumerate(zip(qs, vs)):
            if q.shape != (1, Fm, Fm) or v.shape != (2, Fm, Fm):
                raise ValueError(f"argument wqk/wvp layer {l}: expected shapes (1, {Fm}, {Fm}) and (2, {Fm}, {Fm}), "
                                 f"got {q.shape} and {v.shape}")
        return n // nm

    def forward_products(self, qs, vs, Z, task, blocks):
        """Machine ν receives O_ν W_self + Σ_{μ≠ν} O_μ W_other, exactly as the model; the common layout
        averages the copies of C and D."""
        n, M = task.n, blocks
        nm = n // M
        Bn, T = Z.shape[:2]
        data = Z[..., :n].reshape(Bn, T, M, nm).permute(0, 2, 1, 3)
        query = Z[:, None, :, n:].expand(Bn, M, T, task.n_prime)
        Zm = torch.cat([data, query], -1)                                  # (B, M, T, F_μ)

        def common(Zm):
            dat = Zm[..., :nm].permute(0, 2, 1, 3).reshape(Bn, T, n)
            return torch.cat([dat, Zm[..., nm:].mean(1)], -1)

        acts = [common(Zm)]
        for q, v in zip(qs, vs):
            Zk = Zm[:, :, :task.d]
            G = Zk.transpose(-1, -2) @ Zk
            O = (Zm @ q[0]) @ G
            Zm = Zm + O @ (v[0] - v[1]) + O.sum(1, keepdim=True) @ v[1]
            acts.append(common(Zm))
        return acts

    def map_vp(self, wvp, f_vp):
        """W_VP^μ = [self | other] quantised jointly, as the machine's (F_μ × 2F_μ) matrix."""
        out = []
        for s, o in wvp:
            F = s.shape[1]
            j = f_vp(np.concatenate([s, o], 1))
            out.append([j[:, :F], j[:, F:]])
        return np.asarray(out)

    def vp_parts(self, wvp_l):
        """The self part, and the other part (expected structure diag(c I, b I) with c ≈ 0)."""
        return {"vp": wvp_l[0], "vp_other": wvp_l[1]}

    def align_layer(self, wqk_l, wvp_l, n, P_l) -> None:
        if np.diag(wqk_l[0])[:n].mean() < 0:
            wqk_l *= -1
            wvp_l *= -1

    def alphas(self, wqk, wvp, model) -> dict[str, Any]:
        """Also b / c (the other part's query / data mean diagonals) and the shares of ‖W_other‖_F² in its
        query and data blocks."""
        L, n = model.L, model.n_mu
        a1 = np.array([_md(wqk[l].sum(0), 0, n) for l in range(L)])
        a2 = np.array([_md(wvp[l, 0], 0, n) for l in range(L)])
        a3 = np.array([_md(wvp[l, 0], n, None) for l in range(L)])
        b = np.array([_md(wvp[l, 1], n, None) for l in range(L)])
        c = np.array([_md(wvp[l, 1], 0, n) for l in range(L)])
        tot = np.array([np.sum(wvp[l, 1] ** 2) for l in range(L)])
        tot = np.where(tot > 0, tot, 1.0)
        qm = np.array([np.sum(wvp[l, 1, n:, n:] ** 2) for l in range(L)]) / tot
        dm = np.array([np.sum(wvp[l, 1, :n, :n] ** 2) for l in range(L)]) / tot
        return dict(a1=a1, a2=a2, a3=a3, ab=a1 * a2, cd=a1 * a3, b=b, c=c, other_query_mass=qm, other_data_mass=dm)

    def align_extra(self, extra, s, a1) -> None:
        extra["b"], extra["c"] = extra["b"] * s, extra["c"] * s
        extra["cd_other"] = a1 * extra["b"]

    def norm_blocks(self, model, A, l, sketches):
        """One block A^μ_ℓ per machine: (batch, M, d, n_μ)."""
        M, nm = model.machines, model.n_mu
        return A.reshape(A.shape[0], model.task.d, M, nm).permute(0, 2, 1, 3)

    def iterate(self, model, A, B, C, D, al):
        """Machine μ updates its own A^μ, B^μ and sends its C, D directions; copy ν adds its own with weight
        c_CD and the others' with the "other" coefficient a1·b (the self/other projection)."""
        M = model.machines
        Am, Bm = to_machines(A, M), to_machines(B, M)                     # (batch, M, ·, n_μ)
        Cm, Dm = (x[:, None].expand(x.shape[0], M, *x.shape[1:]) for x in (C, D))
        out = [(A, B, C, D)]
        for l in range(model.L):
            c_ab, c_cd, c_o = float(al.ab[l]), float(al.cd[l]), float(al.cd_other[l])
            Am, Bm, dC, dD = step(Am, Bm, Cm, Dm, -c_ab, 1.0, d_scale=-1.0)   # dC = −A Aᵀ C, dD = −B Aᵀ C
            Cm = combine(Cm, dC, self_weight=-c_cd, other_weight=-c_o)
            Dm = combine(Dm, dD, self_weight=-c_cd, other_weight=-c_o)
            out.append((from_machines(Am), from_machines(Bm), Cm.mean(1), Dm.mean(1)))
        return out


# ------------------------------------------------------------------------------------------- registry
_REGISTRY: dict[str, Regime] = {}
_ALIASES: dict[str, str] = {}


def register(regime: Regime | type, *, replace: bool = False) -> Regime:
    """Add ``regime`` (an instance or a class) to the registry under its ``name``; returns the instance.
    A name (or alias) already taken is an error unless ``replace``."""
    r = regime() if isinstance(regime, type) else regime
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


def get(name: Any) -> Regime:
    """The registered regime ``name`` (or alias); a ``ValueError`` listing the registered ones otherwise.
    A :class:`Regime` instance is returned as is."""
    if isinstance(name, Regime):
        return name
    return _REGISTRY[canonical(name)]


for _cls in (Unconstrained, Distributed, Sketched):
    register(_cls)
#: The paper's three regimes, in the paper's order (what the chapters iterate over).
PAPER: tuple[str, ...] = names()
del _cls


def among(name: Any, names) -> bool:
    """Whether the regime ``name`` is one of ``names`` (aliases resolved): the one place a filter by regime name
    (e.g. a comparison row declared for some regimes only, :class:`eaglebook.comparisons.Row`) compares names."""
    return canonical(name) in {canonical(n) for n in names}
