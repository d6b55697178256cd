"""How a regime's weights are read: extraction's products (their shapes, their forward pass, their quantisation),
the per-layer scalars α¹, α², α³ and their sign alignment, the norms that set a layer's scale, and the per-layer
iteration read out of the weights (chapter 5).  Used by :mod:`eaglebook.extraction`.

* :class:`Diagonal`: each block by its mean diagonal, per head (unconstrained);
* :class:`Projector`: the rank-r data blocks by their least-squares scale against the layer's projector
  (sketched);
* :class:`SelfOther`: the machines' shared block and the self / other parts of the projection (distributed).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._arrays import from_machines, to_machines
from ..solver.update import combine, step, update

__all__ = ["Diagonal", "Projector", "SelfOther", "top_projector"]


def top_projector(Q: np.ndarray, r: int) -> np.ndarray:
    """n×r orthonormal basis of the top-r eigenvectors (by |eigenvalue|) of the symmetrised ``Q``."""
    Qs = (Q + Q.T) / 2
    ev, U = np.linalg.eigh(Qs)
    idx = np.argsort(-np.abs(ev), kind="stable")[:r]
    return U[:, np.sort(idx)]


def _md(w: np.ndarray, lo, hi) -> float:
    """Mean of the diagonal of ``w`` over ``lo:hi``."""
    return float(np.diag(w)[lo:hi].mean())


class Diagonal:
    """Per-layer (H, F, F) products of independent heads, each block read by its mean diagonal (multi-head:
    Σ_h of the per-head products).  ``sketched``: the data blocks are rank-r sketch projectors."""

    sketched = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    # ------------------------------------------------------------------ products
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

    # ------------------------------------------------------------------ scalars and norms
    def alphas(self, wqk: np.ndarray, wvp: np.ndarray, model) -> dict[str, Any]:
        """Per-layer α¹, α², α³, c_AB, c_CD (and the reading's extras) from the products; see
        :class:`eaglebook.extraction.Alphas`.  Multi-head: Σ_h of the per-head products."""
        L, n = model.L, model.n_mu
        a1 = np.array([_md(wqk[l].sum(0), 0, n) for l in range(L)])
        a2 = np.array([_md(wvp[l].sum(0), 0, n) for l in range(L)])
        a3 = np.array([_md(wvp[l].sum(0), n, None) for l in range(L)])
        h1 = np.array([[_md(q, 0, n) for q in wqk[l]] for l in range(L)])
        h2 = np.array([[_md(v, 0, n) for v in wvp[l]] for l in range(L)])
        h3 = np.array([[_md(v, n, None) for v in wvp[l]] for l in range(L)])
        return dict(a1=a1, a2=a2, a3=a3, ab=(h1 * h2).sum(1), cd=(h1 * h3).sum(1))

    def align_extra(self, extra: dict, s: np.ndarray, a1: np.ndarray) -> None:
        """Apply the sign alignment ``s`` to the reading's extra scalars (in place)."""

    def norm_blocks(self, model, A: torch.Tensor, l: int, sketches) -> torch.Tensor:
        """The A blocks whose ‖·‖₂² set the layer's scale (batch, ...): A itself."""
        return A

    def sketches(self, wqk: np.ndarray, model):
        """Per-layer sketch S_ℓ (n × r tensors, from the float64 products ``wqk``) for :meth:`norm_blocks`, or None."""
        return None

    def gamma_of_average(self, gamma_layer, gamma_other_layer, machines: int):
        """γ of Algorithm 1's averaged update, from a layer's own-head and other-heads γ and the machine count
        (None: no head writes to another's copy, so γ is the update's)."""
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


class Projector(Diagonal):
    """One head whose W_QK data block has rank r: α¹, α² are least-squares scales against the layer's projector
    P_ℓ = S_ℓ S_ℓᵀ (the top-r subspace of W_QK's data block), the layer's norm is ‖A_ℓ S_ℓ‖₂², and the extracted
    iteration uses P_ℓ as its sketch."""

    sketched = True

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


class SelfOther(Diagonal):
    """M machines sharing one W_QK block, whose projection has a self part (``wvp[l, 0]``) and an other part
    (``wvp[l, 1]``, written to the other machines' blocks); products are (1, F_μ, F_μ) and (2, F_μ, F_μ)."""

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

    def gamma_of_average(self, gamma_layer, gamma_other_layer, machines: int):
        """Algorithm 1 averages the machines' updates: each copy of C, D gets its own head's step and the
        M − 1 others' (chapter 2: α³ = γ/M per head), so its γ is their sum."""
        return gamma_layer + (machines - 1) * gamma_other_layer

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
