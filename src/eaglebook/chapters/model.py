"""Chapter 2 (book/02_model.md): the linear-attention transformer in three regimes, the checks that a layer
with diagonal weights is one EAGLE-shaped step and that the prediction is read as −D_L, and its figure."""

from __future__ import annotations

import numpy as np

from ..ledger import Check
from ..plotting import METHOD_STYLE, finish, legend_outside, subplots

__all__ = ["model_phrase", "checks", "glued", "plot_readout_sign"]


def model_phrase(mcfg) -> str:
    """The model's set-up, as the findings quote it."""
    return (f"L = {mcfg.layers} {mcfg.attention}-attention layers; sketch rank r = {mcfg.r}; "
            f"M = {mcfg.machines} machines")


def checks(*, layer_err: dict, rel_minus, rel_plus) -> list[Check]:
    """One hand-set layer is the update of eq. (model-diagonal) in every regime (``layer_err``: regime -> the
    largest entry-wise deviation), and after the hand-set layers −D_L converges to B A^† C while +D_L does not
    (``rel_minus``, ``rel_plus``: relative errors per layer)."""
    what = {"unconstrained": "one hand-set layer vs eq. (model-diagonal), unconstrained",
            "sketched": "one hand-set layer vs the sketched update",
            "distributed": "one hand-set layer vs local A-update and averaged D-update"}
    out = [Check(f"C2_layer_err_{r}", layer_err[r], upper=1e-12, what=what[r]) for r in what]
    L = len(rel_minus) - 1
    return out + [Check("C2_readout_minus_rel_err", rel_minus[-1], upper=1e-10,
                        what=f"‖−D_L − B A^† C‖/‖B A^† C‖ after {L} hand-set layers"),
                  Check("C2_readout_plus_rel_err", rel_plus[-1], lower=1.5,
                        what="‖+D_L − B A^† C‖/‖B A^† C‖ (the wrong sign)")]


def glued(built: dict, mcfg) -> dict:
    """Everything chapter 2's prose quotes beyond its checks (``built``: label -> model, as the chapter builds
    them)."""
    return dict(C2_params_unconstrained=built["unconstrained (1 head)"].n_parameters(),
                C2_params_sketched=built["sketched"].n_parameters(),
                C2_params_distributed=built["distributed"].n_parameters(),
                C2_model_setting=model_phrase(mcfg))


def plot_readout_sign(rel_minus, rel_plus):
    """Relative error per layer of the prediction read as −D_ℓ and as +D_ℓ, with the float64 unit roundoff dotted."""
    fig, ax = subplots()
    ax.semilogy(rel_minus, label=r"read $-D_\ell$", **METHOD_STYLE["EAGLE"])
    ax.semilogy(rel_plus, label=r"read $+D_\ell$", **METHOD_STYLE["transformer"])
    ax.axhline(np.finfo(float).eps, color="k", ls=":", lw=0.7)
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel("relative error")
    legend_outside(ax)
    return finish(fig)
