"""Chapter 2's module (eaglebook.chapters.model): its checks, glue and phrase, on fake inputs."""

from types import SimpleNamespace as NS

import numpy as np

from eaglebook.chapters import model as chapter_model
from eaglebook.config import ModelConfig


def _checks(**kw):
    args = dict(layer_err=dict(unconstrained=1e-16, sketched=2e-16, distributed=3e-16),
                rel_minus=np.geomspace(1, 1e-14, 41), rel_plus=np.linspace(1, 2, 41)) | kw
    return {c.key: c for c in chapter_model.checks(**args)}


def _holds(c):
    return (c.lower is None or c.value >= c.lower) and (c.upper is None or c.value <= c.upper)


def test_checks_hold_for_exact_layers_and_the_right_sign():
    cs = _checks()
    assert list(cs) == ["C2_layer_err_unconstrained", "C2_layer_err_sketched", "C2_layer_err_distributed",
                        "C2_readout_minus_rel_err", "C2_readout_plus_rel_err"]
    assert all(_holds(c) for c in cs.values())
    assert cs["C2_readout_minus_rel_err"].what.endswith("after 40 hand-set layers")


def test_checks_fail_for_a_wrong_layer_or_the_wrong_sign():
    cs = _checks(layer_err=dict(unconstrained=1e-16, sketched=1e-3, distributed=0.0),
                 rel_minus=np.linspace(1, 2, 11), rel_plus=np.geomspace(1, 1e-14, 11))
    assert not _holds(cs["C2_layer_err_sketched"]) and _holds(cs["C2_layer_err_distributed"])
    assert not _holds(cs["C2_readout_minus_rel_err"]) and not _holds(cs["C2_readout_plus_rel_err"])
    assert cs["C2_readout_minus_rel_err"].what.endswith("after 10 hand-set layers")


def test_glued_counts_parameters_and_names_the_setting():
    built = {k: NS(n_parameters=lambda v=v: v) for k, v in
             (("unconstrained (1 head)", 1600), ("unconstrained (8 heads)", 12800), ("sketched", 480), ("distributed", 300))}
    g = chapter_model.glued(built, ModelConfig(), readout_layers=40)
    assert (g["C2_params_unconstrained"], g["C2_params_sketched"], g["C2_params_distributed"]) == (1600, 480, 300)
    assert (g["C2_layers"], g["C2_readout_layers"]) == (4, 40)
    assert g["C2_model_setting"] == "L = 4 linear-attention layers; sketch rank r = 5; M = 3 machines"
    assert chapter_model.model_phrase(ModelConfig(layers=8, machines=6)).startswith("L = 8 ")
