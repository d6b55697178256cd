"""The *extracted per-layer* iteration: EAGLE's UPDATE with the trained transformer's coefficients.

Chapter 4 reads, per layer ℓ, the products of the trained scalars c_AB = α¹α² (= −ηρ_ℓ) and
c_CD = α¹α³ (= −γρ_ℓ); :func:`layerwise` runs the UPDATE (:func:`eaglebook.solver.update.update`) with
them, with no normalisation and no rescaling, so that its iterates can be compared layer by layer with
the transformer's activations (``eaglebook.extraction``).
"""

from __future__ import annotations

import numpy as np
import torch

from .._arrays import Blocks, check_batch, check_finite, check_shapes, prepare
from .._arrays import out as to_output
from .update import update as update_step

__all__ = ["layerwise"]


def layerwise(A, B, C, coeffs, *, D=None, readout: str = "eagle") -> list[Blocks]:
    """Run the *extracted per-layer* iteration with given effective step sizes; return all L+1 iterates.

    ``coeffs`` is a sequence of L pairs ``(c_AB, c_CD)``, the products of the trained transformer's
    scalars (the book's chapter 4): c_AB = α¹α² (= −ηρ_ℓ) and c_CD = α¹α³ (= −γρ_ℓ), both negative
    for a converging model.  Layer ℓ applies (S = I, no normalisation, no rescaling)::

        A' = A + c_AB A Aᵀ A       B' = B + c_AB B Aᵀ A
        C' = C + c_CD A Aᵀ C       D' = D − c_CD B Aᵀ C     (readout="eagle": D_L → +B A^† C)

    With ``readout="transformer"`` the last line is D' = D + c_CD B Aᵀ C, the raw D block of the
    transformer's residual stream, which is −D_EAGLE when D₀ = 0 (the read-out sign: the book's reading notes).
    Each coefficient is a number or an array of shape batch (one per instance).  A, B, C are
    (…, d, n), (…, d', n), (…, d, n') NumPy arrays or torch tensors; ``D`` defaults to 0.
    Returns ``[Blocks(A_0, B_0, C_0, D_0), …, Blocks(A_L, …)]`` in the input's type.
    """
    if readout not in ("eagle", "transformer"):
        raise ValueError(f"argument readout={readout!r} must be 'eagle' or 'transformer'")
    named = {"A": A, "B": B, "C": C}
    if D is not None:
        named["D"] = D
    ts, io = prepare(named, allow_grad=True)
    d, n, dp, n_prime = check_shapes(ts["A"], ts["B"], ts["C"], ts.get("D"))
    batch = check_batch(ts, "A")
    try:
        pairs = [tuple(p) for p in coeffs]
    except TypeError:
        raise ValueError("argument coeffs must be a sequence of (c_AB, c_CD) pairs") from None
    steps = []
    for i, p in enumerate(pairs):
        if len(p) != 2:
            raise ValueError(f"argument coeffs[{i}] must be a pair (c_AB, c_CD), got {len(p)} values")
        pair = []
        for c in p:
            t = c.detach() if isinstance(c, torch.Tensor) else np.asarray(c, dtype=np.float64)
            t = torch.as_tensor(t, dtype=io.compute, device=io.device)
            check_finite(f"coeffs[{i}]", t)
            pair.append(t.reshape(t.shape + (1, 1)) if t.ndim else t)
        steps.append(pair)
    A_, B_, C_ = ts["A"], ts["B"], ts["C"]
    D_ = ts.get("D", torch.zeros(batch + (dp, n_prime), dtype=io.compute, device=io.device))
    sign = 1.0 if readout == "eagle" else -1.0
    out = [Blocks(*(to_output(io, x) for x in (A_, B_, C_, D_)))]
    for c_ab, c_cd in steps:
        A_, B_, C_, D_ = update_step(A_, B_, C_, D_, -c_ab, -c_cd, d_scale=sign)
        out.append(Blocks(*(to_output(io, x) for x in (A_, B_, C_, D_))))
    return out
