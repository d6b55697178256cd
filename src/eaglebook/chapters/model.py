"""Chapter 2 (book/02_model.md): the linear-attention transformer in three regimes, and the checks that a layer
with diagonal weights is one EAGLE-shaped step and that the prediction is read as −D_L."""

from __future__ import annotations

from ..ledger import Check

__all__ = ["model_phrase", "checks", "glued"]


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


def glued(built: dict, mcfg, *, readout_layers: int) -> dict:
    """Everything chapter 2's prose quotes beyond its checks (``built``: label -> model, as the chapter builds
    them; ``readout_layers``: the depth of the hand-set stack that settles the read-out sign)."""
    return dict(C2_params_unconstrained=built["unconstrained (1 head)"].n_parameters(),
                C2_params_sketched=built["sketched"].n_parameters(),
                C2_params_distributed=built["distributed"].n_parameters(),
                C2_layers=mcfg.layers, C2_readout_layers=readout_layers, C2_model_setting=model_phrase(mcfg))
