"""GD++ (von Oswald et al. 2023; Vladymyrov et al. 2024) as a baseline, in EAGLE's orientation.

GD++ is a linear transformer whose layers first *condition* the data and whose read-out is *one*
gradient step.  Transposed into the orientation of the paper's Algorithm 1 (tokens = rows of
X = [[A, C], [B, D]]), it is EAGLE's A/B update with γ = 0 (the query columns C and the prediction D
never move) followed by a single C/D step with the final A_L, B_L and the *original* C₀::

    for l = 0, …, L−1:   A_{l+1} = A_l + ω_xx A_l A_lᵀ A_l,   B_{l+1} = B_l + ω_xx B_l A_lᵀ A_l
                         with ω_xx = −1/(3‖A_l‖₂²)              (η = 1/3, as in Theorem 1)
    read-out:            D^{(L)} = ‖A_L‖₂⁻² B_L A_Lᵀ C₀          (the GD step −ω_yx B_L A_Lᵀ C₀)

With a flat spectrum (A_L A_Lᵀ = s² P on its range) the read-out is exactly B A^† C; otherwise its
error is −W* (I − ρ_L E_L) C₀ on consistent data (W* = B A^†, E_L = A_L A_Lᵀ), against EAGLE's
−W* Π_l (I − ρ_l E_l) C₀.  The conditioning layers do not depend on L, so one pass gives the read-out
of *every* depth: ``D_trace[L]`` is what a GD++ network with L conditioning layers predicts.  A network
must still fix L before it sees the result; EAGLE's D_ℓ is a valid estimate at every ℓ.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
import torch

from .._arrays import check_batch, check_shapes, int_in, positive, prepare
from .._arrays import out as to_output
from .norms import check_rho_method, inv_square, spectral_norm
from .update import step

__all__ = ["GDppResult", "gdpp"]


class GDppResult(NamedTuple):
    """What :func:`gdpp` returns.

    ``D``: the read-out after ``layers`` conditioning layers (input's array type and dtype);
    ``layers``: L; ``D_trace``: list of the read-outs D^{(l)} for l = 0, …, L (the prediction of a GD++
    network with l conditioning layers); ``error``: float64 array of ‖D^{(l)} − reference‖_F² (mean
    over a batch), ``rel_error``: ‖D^{(l)} − reference‖_F / ‖reference‖_F, both of length L + 1 and
    None without a reference.
    """
    D: object
    layers: int
    D_trace: list
    error: np.ndarray | None
    rel_error: np.ndarray | None


def gdpp(A, B, C, *, layers: int, eta: float = 1 / 3, rho: str | Callable = "exact",
         power_iters: int = 5, seed: int = 0, reference=None) -> GDppResult:
    """GD++ in EAGLE's orientation: ``layers`` conditioning layers, then one gradient step read-out.

    Parameters
    ----------
    A, B, C : (…, d, n), (…, d', n), (…, d, n') NumPy arrays or torch tensors (the same inputs as
        ``eaglebook.solve``); the result has the input's array type and dtype.
    layers : L >= 0, the number of conditioning layers (L = 0 is plain one-step GD).
    eta : conditioning step, ω_xx = −η/‖A_l‖₂² (default 1/3, the constant of Theorem 1 and of
        Vladymyrov et al.'s GD++ construction).
    rho : ``"exact"`` spectral norms, ``"power"`` (``power_iters`` warm-started power iterations, seeded
        by ``seed``), or a callable returning ‖A_l‖₂ for a (…, d, n) tensor.
    reference : optional (…, d', n') target for ``error`` and ``rel_error``.

    Raises
    ------
    ValueError naming the argument: bad shapes or non-finite entries, layers < 0, eta <= 0, unknown rho.
    """
    int_in("layers", layers, 0)
    positive("eta", eta)
    int_in("power_iters", power_iters, 1)
    check_rho_method(rho)
    ts, io = prepare({"A": A, "B": B, "C": C}, {"reference": reference} if reference is not None else None)
    check_shapes(ts["A"], ts["B"], ts["C"])
    batch = check_batch({k: ts[k] for k in "ABC"}, "A")
    dp, n_prime = ts["B"].shape[-2], ts["C"].shape[-1]
    ref = ts.get("reference")
    if ref is not None and tuple(ref.shape[-2:]) != (dp, n_prime):
        raise ValueError(f"argument reference has shape {tuple(ref.shape[-2:])}, expected d'×n' = {(dp, n_prime)}")
    A_, B_, C0 = ts["A"], ts["B"], ts["C"]
    u = None
    if rho == "power":
        g = np.random.default_rng(seed)
        u = torch.as_tensor(g.standard_normal(batch + (A_.shape[-2], 1)), dtype=io.compute, device=io.device)
    trace, errs, rels = [], [], []
    ref_n2 = float((ref ** 2).sum()) if ref is not None else None
    nbatch = max(1, math.prod(batch))
    for l in range(layers + 1):
        s, u = spectral_norm(A_, rho, u, 2 * power_iters if l == 0 else power_iters)
        r = inv_square(s)
        D = r * (B_ @ (A_.mT @ C0))                 # the read-out of a depth-l network
        trace.append(D)
        if ref is not None:
            sq = float(((D.to(torch.float64) - ref) ** 2).sum())
            errs.append(sq / nbatch)
            rels.append(math.sqrt(sq / ref_n2) if ref_n2 > 0 else (0.0 if sq == 0 else math.inf))
        if l < layers:                              # conditioning layer: the UPDATE's A/B lines (γ = 0)
            A_, B_, _, _ = step(A_, B_, None, None, eta * r, 0.0)
    return GDppResult(to_output(io, trace[-1]), int(layers), [to_output(io, t) for t in trace],
                      np.asarray(errs, dtype=np.float64) if ref is not None else None,
                      np.asarray(rels, dtype=np.float64) if ref is not None else None)
