"""The array layer: validation, NumPy/torch conversion and the distributed column layout.

Every numerical module (``tasks``, the ``solver`` package, ``extraction``) shares these helpers, so
that a bad input gets the same error everywhere and the solver needs no task or model code:

* :class:`Blocks`, :func:`check_shapes`, :func:`check_finite`: the four blocks of X = [[A, C], [B, D]]
  and their validation (errors name the offending argument);
* :func:`positive`, :func:`int_in`, :func:`is_number`, :func:`as_rng`: scalar arguments;
* :func:`to_tensor`, :func:`prepare`, :func:`out`, :func:`check_batch`: NumPy in → NumPy out, torch in →
  torch out on its device, computed in float64 or float32;
* :func:`machine_edges`, :func:`split_columns`, :func:`to_machines`, :func:`from_machines`,
  :func:`machine_blocks`, :func:`common_layout`: the distributed layout, one place for "machine μ holds
  the μ-th contiguous block of the n data columns and its own copy of the query columns".
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import NamedTuple

import numpy as np
import torch

__all__ = [
    "Blocks", "check_shapes", "check_finite", "is_number", "positive", "int_in", "as_rng", "to_tensor", "densify",
    "IO", "prepare", "out", "check_batch", "machine_edges", "split_columns", "to_machines", "from_machines",
    "machine_blocks", "common_layout",
]


class Blocks(NamedTuple):
    """The four blocks of X (or of any activation Z with the same layout)."""
    A: object
    B: object
    C: object
    D: object


def _shape(x) -> tuple[int, ...]:
    return tuple(x.shape)


def check_finite(name: str, x) -> None:
    """Raise ``ValueError`` naming ``name`` if ``x`` has a NaN or an infinity."""
    ok = bool(torch.isfinite(x).all()) if isinstance(x, torch.Tensor) else bool(np.isfinite(np.asarray(x)).all())
    if not ok:
        raise ValueError(f"argument {name} has non-finite entries (NaN or inf)")


def check_shapes(A, B, C, D=None) -> tuple[int, int, int, int]:
    """Validate the block shapes; return (d, n, d', n').  Errors name the offending argument."""
    for name, x in (("A", A), ("B", B), ("C", C)):
        if len(_shape(x)) < 2:
            raise ValueError(f"argument {name} must be a matrix (or a batch of matrices), got shape {_shape(x)}")
    d, n = _shape(A)[-2:]
    dp, nB = _shape(B)[-2:]
    dC, np_ = _shape(C)[-2:]
    if nB != n:
        raise ValueError(f"argument B has {nB} columns but A has {n}: B must be d'×n")
    if dC != d:
        raise ValueError(f"argument C has {dC} rows but A has {d}: C must be d×n'")
    if D is not None and _shape(D)[-2:] != (dp, np_):
        raise ValueError(f"argument D has shape {_shape(D)[-2:]}, expected d'×n' = {(dp, np_)}")
    return d, n, dp, np_


# ---------------------------------------------------------------------------------------------- scalars
def is_number(v) -> bool:
    """A real number that is not a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def positive(name: str, v) -> float:
    """``v`` as a float; ``ValueError`` naming ``name`` unless it is a finite number > 0."""
    if not is_number(v) or not math.isfinite(float(v)) or float(v) <= 0:
        raise ValueError(f"argument {name}={v!r} must be a finite number > 0")
    return float(v)


def int_in(name: str, v, lo: int, hi: int | None = None) -> int:
    """``v`` as an int; ``ValueError`` naming ``name`` unless lo <= v (<= hi)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo or (hi is not None and v > hi):
        rng = f"{lo} <= {name} <= {hi}" if hi is not None else f"{name} >= {lo}"
        raise ValueError(f"argument {name}={v!r} must be an integer with {rng}")
    return int(v)


def as_rng(seed, name: str = "seed") -> np.random.Generator:
    """A NumPy Generator from a non-negative int, None or a Generator (``ValueError`` otherwise)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0):
        return np.random.default_rng(seed)
    raise ValueError(f"argument {name}={seed!r} must be a non-negative integer, None or a numpy Generator")


# ---------------------------------------------------------------------------------------------- arrays
def densify(name: str, x):
    """A dense NumPy array or torch tensor for the sparse inputs the solvers accept, else ``x`` itself."""
    if isinstance(x, torch.Tensor):
        return x.to_dense() if x.layout != torch.strided else x
    if hasattr(x, "toarray") and hasattr(x, "nnz"):                     # scipy.sparse matrix or array
        return x.toarray()
    if hasattr(x, "matmat") and hasattr(x, "rmatvec") and hasattr(x, "shape"):   # a LinearOperator
        m, n = x.shape
        dtype = np.dtype(x.dtype) if getattr(x, "dtype", None) is not None else np.dtype(np.float64)
        if dtype.kind not in "biuf":
            raise ValueError(f"argument {name} is a LinearOperator of dtype {dtype}; need a real one")
        return np.asarray(x.matmat(np.eye(n, dtype=np.float64)))       # n products with the operator
    return x


def to_tensor(name: str, x, *, allow_grad: bool = False) -> torch.Tensor:
    """A real, non-empty torch tensor of at least 2 dimensions (no copy when possible).

    Sparse inputs are densified (``scipy.sparse`` matrices and arrays, torch sparse tensors, and
    ``scipy.sparse.linalg.LinearOperator``, the last by n products with the identity).  A tensor that
    requires grad is refused unless ``allow_grad``."""
    x = densify(name, x)
    if isinstance(x, torch.Tensor):
        t = x
        if t.requires_grad and not allow_grad:
            raise ValueError(f"argument {name} requires grad: the solvers do not differentiate through their "
                             f"iterations (the stopping rule and the rescaling are not differentiable); pass "
                             f"{name}.detach()")
    else:
        try:
            a = np.asarray(x)
        except Exception as e:  # ragged lists etc.
            raise ValueError(f"argument {name} is not an array: {e}") from None
        if a.dtype == object or a.dtype.kind not in "biuf":
            raise ValueError(f"argument {name} must be a real numeric array (NumPy, torch, scipy.sparse or a "
                             f"LinearOperator), got {type(x).__name__} of dtype {a.dtype}")
        if a.dtype.kind == "f" and a.dtype.itemsize > 8:
            raise ValueError(f"argument {name} has dtype {a.dtype}, which torch cannot hold: "
                             "convert it with .astype(np.float64)")
        with warnings.catch_warnings():   # a read-only array (a broadcast view, np.load(mmap_mode="r")):
            warnings.filterwarnings("ignore", "The given NumPy array is not writable", UserWarning)
            t = torch.from_numpy(np.ascontiguousarray(a))     # the solvers never write to their inputs
    if t.is_complex():
        raise ValueError(f"argument {name} must be real, got dtype {t.dtype}")
    if t.ndim < 2:
        raise ValueError(f"argument {name} must be a matrix (or a batch of matrices), got shape {tuple(t.shape)}")
    if any(s == 0 for s in t.shape):
        raise ValueError(f"argument {name} has an empty dimension, shape {tuple(t.shape)}")
    return t


class IO(NamedTuple):
    """How results go back to the caller: NumPy or torch, the output dtype, the compute dtype, device."""
    numpy: bool
    compute: torch.dtype
    out_torch: torch.dtype
    out_numpy: object
    device: torch.device


def prepare(named: dict, extra: dict | None = None, *, allow_grad: bool = False) -> tuple[dict, IO]:
    """Convert the named inputs to torch on a common device and compute dtype (float64 or float32).

    The output dtype is the promoted dtype of the floating inputs (half precision is computed in float32 and
    returned as it came); when every input is an integer (or bool) array, NumPy or torch, it is float64.

    ``extra`` inputs (e.g. a reference solution) are converted and checked too, in float64, but do not
    take part in choosing the array type, dtype or device of the results.  Sparse inputs are densified
    (:func:`to_tensor`); torch sparse input counts as torch (the results are dense torch tensors).
    """
    any_torch = any(isinstance(x, torch.Tensor) for x in named.values())
    ts = {k: to_tensor(k, v, allow_grad=allow_grad) for k, v in named.items()}
    devices = {t.device for k, t in ts.items() if isinstance(named[k], torch.Tensor)}
    if len(devices) > 1:
        raise ValueError(f"arguments {', '.join(named)} are on different devices: {sorted(map(str, devices))}")
    device = devices.pop() if devices else torch.device("cpu")
    floats = [t.dtype for t in ts.values() if t.is_floating_point()]
    if floats:
        out_dtype = floats[0]
        for f in floats[1:]:
            out_dtype = torch.promote_types(out_dtype, f)
    else:   # integer or bool input only: float64 for NumPy and torch alike (not torch's default dtype)
        out_dtype = torch.float64
    compute = torch.float64 if out_dtype == torch.float64 else torch.float32
    for k, t in ts.items():
        check_finite(k, t)
    ts = {k: t.to(device=device, dtype=compute) for k, t in ts.items()}
    for k, v in (extra or {}).items():
        t = to_tensor(k, v)
        check_finite(k, t)
        ts[k] = t.to(device=device, dtype=torch.float64)
    np_dtype = None if any_torch else torch.empty(0, dtype=out_dtype).numpy().dtype
    return ts, IO(not any_torch, compute, out_dtype, np_dtype, device)


def out(io: IO, t: torch.Tensor):
    """``t`` converted back to the caller's array type and dtype."""
    if io.numpy:
        with np.errstate(over="ignore"):   # a value beyond the output dtype becomes inf (callers report it)
            return t.detach().cpu().numpy().astype(io.out_numpy, copy=False)
    return t.to(io.out_torch)


def check_batch(ts: dict, ref: str) -> tuple[int, ...]:
    """The common leading batch shape of the tensors in ``ts`` (``ValueError`` naming the odd one out)."""
    batch = tuple(ts[ref].shape[:-2])
    for k, t in ts.items():
        if tuple(t.shape[:-2]) != batch:
            raise ValueError(f"argument {k} has batch shape {tuple(t.shape[:-2])} but {ref} has {batch}")
    return batch


# ---------------------------------------------------------------------------------------------- machines
def machine_edges(n: int, machines: int) -> np.ndarray:
    """Column boundaries of the contiguous split of n columns over M machines (length M+1).

    Machine μ holds columns ``edges[μ]:edges[μ+1]``; the blocks are equal when M divides n.
    """
    int_in("machines", machines, 1, n)
    return np.linspace(0, n, machines + 1).round().astype(int)


def split_columns(A, B, machines: int) -> tuple[list, list]:
    """Split the n columns of A and B into ``machines`` contiguous blocks (:func:`machine_edges`): the
    per-machine lists ``(A_blocks, B_blocks)`` that :func:`eaglebook.solve_distributed` takes.  NumPy arrays
    and torch tensors are sliced (views); anything else is converted to a NumPy array first."""
    A = A if isinstance(A, (np.ndarray, torch.Tensor)) else np.asarray(to_tensor("A", A))
    B = B if isinstance(B, (np.ndarray, torch.Tensor)) else np.asarray(to_tensor("B", B))
    n = A.shape[-1]
    edges = machine_edges(n, machines)
    if B.shape[-1] != n:
        raise ValueError(f"argument B has {B.shape[-1]} columns but A has {n}")
    return ([A[..., a:b] for a, b in zip(edges[:-1], edges[1:])],
            [B[..., a:b] for a, b in zip(edges[:-1], edges[1:])])


def to_machines(X, machines: int):
    """(…, rows, n) → (…, M, rows, n/M): the M contiguous column blocks stacked on a machine axis.

    M must divide n (equal blocks, as weight sharing across machines requires).  Works on torch
    tensors and NumPy arrays; :func:`from_machines` is its inverse.
    """
    *lead, rows, n = X.shape
    if isinstance(machines, bool) or not isinstance(machines, (int, np.integer)) or machines < 1 or n % machines:
        raise ValueError(f"argument machines={machines!r} must be a positive integer dividing n = {n}")
    Xm = X.reshape(*lead, rows, machines, n // machines)
    return Xm.swapaxes(-3, -2) if isinstance(Xm, np.ndarray) else Xm.transpose(-3, -2)


def from_machines(Xm):
    """(…, M, rows, n_μ) → (…, rows, M·n_μ), the inverse of :func:`to_machines`."""
    *lead, M, rows, nm = Xm.shape
    X = Xm.swapaxes(-3, -2) if isinstance(Xm, np.ndarray) else Xm.transpose(-3, -2)
    return X.reshape(*lead, rows, M * nm)


def machine_blocks(Z, machines: int, n: int):
    """(…, T, n+n') → (…, M, T, n_μ+n'): machine μ's block [A^μ C; B^μ D], its n_μ = n/M data columns
    followed by its own copy of the n' query columns (the distributed regime's layout)."""
    data = to_machines(Z[..., :n], machines)
    query = Z[..., None, :, n:]
    if isinstance(Z, np.ndarray):
        return np.concatenate([data, np.broadcast_to(query, data.shape[:-1] + query.shape[-1:])], -1)
    return torch.cat([data, query.expand(*data.shape[:-1], query.shape[-1])], -1)


def common_layout(Zm, n_mu: int):
    """(…, M, T, n_μ+n') → (…, T, n+n'), the inverse of :func:`machine_blocks` where the machines'
    copies of the query columns agree (their mean is taken, as the distributed read-out does)."""
    data = from_machines(Zm[..., :n_mu])
    query = Zm[..., n_mu:].mean(-3)
    return np.concatenate([data, query], -1) if isinstance(Zm, np.ndarray) else torch.cat([data, query], -1)
