"""Real matrices for the paper's Table 2 set-up (§5.4): a Matrix Market loader, SuiteSparse HB/illc1850
(shipped with the package as a Matrix Market file), and the reduction of a low-rank matrix to a full-rank
system w A = B.

* :func:`load_matrix_market` reads any ``.mtx`` file (``scipy.io.mmread``) and refuses, with a
  ``ValueError`` naming the file, one that is missing, malformed, complex or has no numeric values.
* :func:`illc1850` returns HB/illc1850 (1850×712) from ``eaglebook/data/illc1850.mtx``: the Harwell–Boeing
  least-squares matrix ILLC1850 from the SuiteSparse Matrix Collection (CC-BY 4.0; the file's header
  gives its provenance).
* :func:`table2_problem` permutes rows and columns so that an r×r block A (r = the numerical rank) is
  nonsingular, keeps one further row as B (the paper reduces B and D to a single row), and sets C = I_r,
  so that the completion D = B A^† C *is* the solution w of w A = B.  The paper's stopping rule is
  ‖w A − B‖² ≤ 1e-3 ‖B‖².
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import scipy.io
import scipy.linalg
import scipy.sparse

__all__ = ["load_matrix_market", "illc1850", "illc1850_path", "table2_problem"]


def load_matrix_market(path) -> scipy.sparse.csr_array | np.ndarray:
    """Read a real Matrix Market file; a sparse CSR array (coordinate format) or a dense array.

    Raises ``ValueError`` naming the file when it does not exist, is not a Matrix Market file, is
    malformed, is complex or a ``pattern`` matrix (no numeric values), or has non-finite entries.
    """
    p = Path(os.fspath(path))
    if not p.is_file():
        raise ValueError(f"argument matrix={str(p)!r}: no such file")
    try:
        with open(p, "rb") as f:
            head = f.readline().decode("ascii", errors="replace").strip()
    except OSError as e:
        raise ValueError(f"argument matrix={str(p)!r}: cannot be read ({e})") from None
    if not head.lower().startswith("%%matrixmarket"):
        raise ValueError(f"argument matrix={str(p)!r} is not a Matrix Market file: its first line must start "
                         f"with '%%MatrixMarket', got {head[:60]!r}")
    fields = head.lower().split()
    if "pattern" in fields:
        raise ValueError(f"argument matrix={str(p)!r} is a 'pattern' Matrix Market file: it has no numeric values")
    if "complex" in fields:
        raise ValueError(f"argument matrix={str(p)!r} is complex; the benchmarks need a real matrix")
    try:
        M = scipy.io.mmread(str(p))
    except Exception as e:  # scipy raises ValueError, IndexError, ... on malformed content
        raise ValueError(f"argument matrix={str(p)!r} is a malformed Matrix Market file "
                         f"({type(e).__name__}: {e})") from None
    if scipy.sparse.issparse(M):
        M = scipy.sparse.csr_array(M)
        vals = M.data
    else:
        M = np.asarray(M)
        vals = M
    if vals.dtype.kind not in "biuf":
        raise ValueError(f"argument matrix={str(p)!r} has non-numeric values (dtype {vals.dtype})")
    if not np.isfinite(vals).all():
        raise ValueError(f"argument matrix={str(p)!r} has non-finite entries (NaN or inf)")
    if min(M.shape) < 2:
        raise ValueError(f"argument matrix={str(p)!r} has shape {M.shape}; need at least 2×2")
    return M.astype(np.float64)


def illc1850_path() -> Path:
    """The Matrix Market file of HB/illc1850 shipped with the package (``eaglebook/data/illc1850.mtx``; its
    header says where it comes from: the SuiteSparse Matrix Collection, CC-BY 4.0)."""
    return Path(__file__).resolve().parents[1] / "data" / "illc1850.mtx"


def illc1850() -> scipy.sparse.csr_array:
    """HB/illc1850 (1850×712, SuiteSparse), read with :func:`load_matrix_market` from the package's copy."""
    M = load_matrix_market(illc1850_path())
    if M.shape != (1850, 712):
        raise ValueError(f"{illc1850_path()}: expected a 1850×712 matrix, got {M.shape}")
    return M


def table2_problem(M, *, max_cols: int | None = None, rtol: float | None = None, seed: int = 0) -> dict:
    """The paper's Table 2 set-up on a (sparse or dense) matrix M.

    1. Optionally keep only the first ``max_cols`` columns (a smaller test case).
    2. Columns: QR with column pivoting of M gives its numerical rank r (|R_kk| > rtol·|R_00|, default
       max(shape)·eps) and r independent columns J.  Rows: QR with pivoting of M[:, J]ᵀ gives r rows I
       with M[I, J] nonsingular.  A = M[I, J] (r×r).
    3. B: the remaining rows (restricted to J) reduced to one row by a Gaussian combination (seeded by
       ``seed``; a single row of a sparse matrix is often a copy of a row of A, which makes w trivial);
       C = I_r, so D = B A^† C = w.
    Returns ``dict(A, B, C, w, rows, cols, rank, kappa, shape, nnz_fraction)``.
    """
    X = M.toarray() if scipy.sparse.issparse(M) else np.asarray(M, dtype=np.float64)
    if max_cols is not None:
        X = X[:, :max_cols]
    m, k = X.shape
    tol = rtol if rtol is not None else max(m, k) * np.finfo(float).eps
    _, R, piv = scipy.linalg.qr(X, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    if diag.size == 0 or not diag[0] > 0:
        raise ValueError(f"the {m}×{k} matrix is zero (numerical rank 0): there is no system w A = B to solve")
    r = int((diag > tol * diag[0]).sum())
    J = np.sort(piv[:r])
    _, R2, piv2 = scipy.linalg.qr(X[:, J].T, mode="economic", pivoting=True)
    I = np.sort(piv2[:r])
    rest = np.setdiff1d(np.arange(m), I)
    if rest.size == 0:
        raise ValueError(f"the {m}×{k} matrix has numerical rank {r} = its number of rows: no row is left for B "
                         f"after choosing the full-rank {r}×{r} block A (the set-up needs more rows than its rank)")
    g = np.random.default_rng(seed).standard_normal(rest.size) / math.sqrt(rest.size)
    A = X[np.ix_(I, J)]
    B = (g @ X[np.ix_(rest, J)])[None, :]
    w = np.linalg.solve(A.T, B.T).T
    s = np.linalg.svd(A, compute_uv=False)
    nnz = (M.nnz if scipy.sparse.issparse(M) else np.count_nonzero(M)) / (M.shape[0] * M.shape[1])
    return dict(A=A, B=B, C=np.eye(r), w=w, rows=I, cols=J, rank=r, kappa=float(s[0] / s[-1]),
                shape=tuple(int(v) for v in M.shape), nnz_fraction=float(nnz))
