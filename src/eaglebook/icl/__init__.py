"""In-context linear regression with per-sequence noise (Vladymyrov, von Oswald, Sandler, Ge, NeurIPS 2024)
in the book's block-completion frame (chapter 10).

- :mod:`.task`: the noisy regression task, its prompts as Z = [[Xᵀ, x_q], [yᵀ, 0]], the configs;
- :mod:`.models`: single-head linear transformers over the columns of Z (their tokens (x_i, y_i)) in the
  three parameterisations FULL, DIAG and GD++;
- :mod:`.baselines`: ridge with the true noise (oracle), ConstRR, AdaRR, TunedRR; the adjusted loss;
- :mod:`.training`: Adam with a cosine schedule, cached on disk by config hash;
- :mod:`.readings`: the ω's per layer, and the two readings of the learned iteration (their GD++ over the
  columns, the paper's EAGLE over the rows of Zᵀ) with their fidelity.

Depends on the infrastructure (config checks, cache) and the solver's UPDATE only.
"""

from . import baselines, models, readings, task
from .task import ICLTask, ICLModel, ICLTrain

__all__ = ["task", "models", "baselines", "training", "readings", "ICLTask", "ICLModel", "ICLTrain"]


def __getattr__(name):
    # imported on first use, so that `python -m eaglebook.icl.training` does not find it imported already
    if name == "training":
        import importlib
        return importlib.import_module(f"{__name__}.training")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
