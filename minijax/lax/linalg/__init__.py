"""`minijax.lax.linalg`: linear algebra primitives, as `jax.lax.linalg`.

Every primitive lowers to jaxlib's CPU LAPACK kernels (typed-FFI custom calls, `lapack.py`),
exactly as JAX does on CPU: `cholesky` to potrf, `triangular_solve` to trsm, `lu` to getrf,
`qr` to geqrf and orgqr/ungqr, `eigh` to syevd/heevd, `eig` to geev, `svd` to gesdd (gesvd
with `algorithm=SvdAlgorithm.QR`), `tridiagonal_solve` to gtsv, `schur` to gees,
`hessenberg` to gehrd, `tridiagonal` to sytrd/hetrd.  Every primitive takes batches of
matrices (`[..., m, n]`) and has JAX's jvp rule where JAX has one; `triangular_solve` and
`tridiagonal_solve` are linear in their right-hand side and have transpose rules.  Only
float32, float64, complex64 and complex128 are accepted.  `qdwh` (the polar decomposition)
and the functions of `composites.py` are compositions of these.
"""
from __future__ import annotations

from minijax.lax.linalg.matrices import symmetrize  # noqa: F401
from minijax.lax.linalg.triangular import (  # noqa: F401
    cholesky, cholesky_p, triangular_solve, triangular_solve_p)
from minijax.lax.linalg.lu import lu, lu_p, lu_pivots_to_permutation, lu_solve  # noqa: F401
from minijax.lax.linalg.qr import qr, qr_p  # noqa: F401
from minijax.lax.linalg.spectral import (  # noqa: F401
    EighImplementation, SvdAlgorithm, eigh, eigh_p, svd, svd_p)
from minijax.lax.linalg.eig import EigImplementation, eig, eig_p  # noqa: F401
from minijax.lax.linalg.tridiagonal_solve import (  # noqa: F401
    tridiagonal_solve, tridiagonal_solve_p)
from minijax.lax.linalg.schur import (  # noqa: F401
    hessenberg, hessenberg_p, householder_product, householder_product_p, schur, schur_p,
    tridiagonal, tridiagonal_p)
from minijax.lax.linalg.composites import (  # noqa: F401
    cholesky_update, ormqr, symmetric_product)
from minijax.lax.linalg.qdwh import qdwh  # noqa: F401
