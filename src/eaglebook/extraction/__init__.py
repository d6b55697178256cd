"""Extracting the algorithm from a trained linear transformer (the paper's App. B.5 and Table 1).

The paper's pipeline, step by step, one module per step (everything is re-exported here):

1. **Quantisation / sparsification** (:mod:`.products`).  :func:`sparsify` zeroes every entry below
   ``factor`` × the mean absolute entry (the paper's τ = 1.5·‖W‖₁/#entries); :func:`quantize` then
   clusters the surviving values.  *Levels and zeros*: the zero produced by the threshold **counts as
   one of the levels**, so W_QK's "2 levels" are {0, α¹} and W_VP's "3 levels" are {0, α², α³}; the
   non-zero survivors are clustered into ``levels − 1`` values by a deterministic 1-D k-means (Lloyd's
   algorithm started from the quantiles).  This is the only reading under which the reported
   structures diag(α¹I, 0) and diag(α²I, α³I) have exactly 2 and 3 distinct entries.
   :func:`quantized_model` returns a model whose products are replaced by their quantised versions
   (unconstrained: per head; distributed: the shared W_QK block, and the self and other parts of W_VP
   quantised *jointly* as the machine's (F_μ × 2F_μ) W_VP^μ).  The sketched regime cannot be
   re-factorised after quantisation (W_Q is (n+n')×r), so everything that changes weights is
   evaluated through the *product-parametrised* forward pass :func:`forward_products`, which runs the
   layer definition Z ← Z + Σ_h (Z W_QK^h Z_kᵀ) Z_k W_VP^h (keys Z_k = the first d tokens) for every
   regime.  :func:`sparsification_curve` is Fig. 10 (test MSE against the threshold factor).
2. **Matrix property tests** (:mod:`.structure`).  :func:`matrix_properties` / :func:`weight_properties`:
   mass off the expected structure, sparsity, numerical rank, with a Gaussian matrix of the
   same shape and Frobenius norm as the "random" reference.
3. **Per-layer scalars** (:mod:`.scalars`; the sketch structure in :mod:`.regimes`).  :func:`alphas` reads α¹, α², α³ per layer (distributed: also
   the "other" part b, c; sketched: relative to the layer's effective projector P_ℓ, see
   :func:`sketch_structure`), sign-aligned as in Fig. 12 (α¹ > 0, so that α², α³ < 0 in a converging
   model).  The products c_AB = α¹α², c_CD = α¹α³ are sign-invariant.
4. **Scaling laws** (:mod:`.scalars`).  :func:`scaling_law`: η_ℓ = −c_AB,ℓ · max_batch ‖A_ℓ‖₂² and
   γ_ℓ = −c_CD,ℓ · max_batch ‖A_ℓ‖₂², with A_ℓ the transformer's *own* layer-ℓ activations.  The
   fitted η is the median of η_ℓ over layers 0..L−2 (the last layer's A update never reaches the
   read-out, so its α² stays near its initial value); γ is the median over all L layers.
5. **Fidelity** (:mod:`.fidelity`; Table 1).  :func:`fidelity`: per layer, ‖Z_ℓ − Ẑ_ℓ‖_F² / #entries(Z), batch
   mean, between the transformer's activations and the extracted iteration with constant per-layer
   coefficients, both in float64 and in the common (d+d')×(n+n') layout.  *D sign*: the raw D block of
   the transformer's residual stream is compared with the extracted iteration run with
   ``readout="transformer"`` (D' = D + c_CD B Aᵀ C), i.e. −D_EAGLE; no sign is flipped afterwards.
6. **Heads** (:mod:`.heads`).  :func:`head_ablation`; pruning itself is ``models.prune_to``.

Everything is a pure function: weights are read, never modified (copies are returned).  Inputs are
torch tensors or NumPy arrays; results are frozen dataclasses or dicts of floats and NumPy arrays
(float64).  Regime-specific functions raise ``ValueError`` naming ``model`` when given the wrong
regime; bad numeric arguments raise ``ValueError`` naming the argument.
"""

from __future__ import annotations

from .fidelity import Fidelity, extracted_iterates, fidelity
from .heads import head_ablation
from .products import (Products, SparsificationCurve, forward_products, from_products, kmeans_1d, layer_products,
                       products, quantize, quantized_model, quantized_products, run_products, sparsification_curve,
                       sparsified_products, sparsify)
from .regimes import SketchLayer, sketch_projectors, sketch_structure
from .scalars import Alphas, ScalingLaw, aligned_products, alphas, batch_norms, scaling_law
from .structure import MatrixProperties, matrix_properties, structure_projection, weight_properties

__all__ = [
    "sparsify", "quantize", "kmeans_1d", "Products", "products", "layer_products", "aligned_products", "from_products",
    "forward_products", "run_products", "sparsified_products", "quantized_products", "quantized_model",
    "SparsificationCurve", "sparsification_curve", "MatrixProperties", "matrix_properties",
    "structure_projection", "weight_properties", "Alphas", "alphas", "SketchLayer", "sketch_structure",
    "sketch_projectors", "ScalingLaw", "batch_norms", "scaling_law", "Fidelity", "fidelity",
    "extracted_iterates", "head_ablation",
]
