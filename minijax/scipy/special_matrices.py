"""scipy.linalg's special matrices (JAX 0.10.2's `jax.scipy.linalg` names): those of a
static size are built exactly on the host (`pascal`, `invhilbert`, ...: integers, rounded
once to the default float), those of array arguments from lax ops, batched over leading
dimensions as JAX's `toeplitz` is."""
from __future__ import annotations

import math

import numpy as np

from minijax import numpy as jnp
from minijax.core import dtypes


def _float(values):
  return jnp.asarray(np.asarray(values, np.float64), dtype=dtypes.default_float_dtype())


def _exact(entry, n: int):
  """The n x n matrix of the exact (integer) `entry(i, j)`, rounded once to float."""
  return _float(np.array([[entry(i, j) for j in range(n)] for i in range(n)],
                         np.float64).reshape(n, n))


def _size(name: str, n) -> int:
  n = int(n)
  if n < 0:
    raise ValueError(f"{name}: n must be a non-negative integer, got {n}")
  return n


def block_diag(*arrs):
  """The block-diagonal matrix of `arrs` (0-d and 1-d ones are rows of one block)."""
  if not arrs:
    return jnp.zeros((1, 0))
  blocks = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
  if any(b.ndim != 2 for b in blocks):
    raise ValueError("block_diag: arguments must have two or fewer dimensions")
  dtype = jnp.result_type(*blocks)
  width = sum(b.shape[1] for b in blocks)
  rows, left = [], 0
  for b in blocks:
    rows.append(jnp.pad(b.astype(dtype), ((0, 0), (left, width - left - b.shape[1]))))
    left += b.shape[1]
  return jnp.concatenate(rows, axis=0)


def circulant(c):
  """The circulant matrix with first column `c`: entry (i, j) is c[(i - j) % n]."""
  c = jnp.atleast_1d(c)
  n = c.shape[-1]
  return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def companion(a):
  """The companion matrix of the polynomial with coefficients `a` (highest first; a batch
  along leading axes)."""
  a = jnp.asarray(a)
  a = a.astype(dtypes.to_inexact_dtype(a.dtype))
  if a.ndim < 1 or a.shape[-1] < 2:
    raise ValueError("companion: the coefficients (the last axis of `a`) must have at least "
                     f"two entries; got shape {a.shape}")
  n = a.shape[-1] - 1
  first = -a[..., 1:] / a[..., :1]
  below = jnp.broadcast_to(jnp.eye(n - 1, n, dtype=first.dtype), (*a.shape[:-1], n - 1, n))
  return jnp.concatenate([first[..., None, :], below], axis=-2)


def fiedler_companion(a):
  """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients `a`
  (highest first; a batch along leading axes): with b = a / a[0] and n its degree,
  b's negated coefficients -b[1], -b[2], ... alternate between the first sub- and
  super-diagonal (-b[1] at (0, 0), -b[k] at (k - 2, k - 1) for even k and at (k - 1, k - 2)
  for odd k), with ones at (1, 0), at (i, i + 2) for even i and at (i, i - 2) for odd i."""
  a = jnp.asarray(a)
  if a.ndim > 1:
    return jnp.stack([fiedler_companion(row) for row in a])
  if a.ndim == 0 or a.shape[0] <= 1:
    return jnp.zeros((0, 0), dtypes.to_inexact_dtype(a.dtype))
  b = a / a[0]
  n = a.shape[0] - 1
  c = jnp.zeros((n, n), b.dtype).at[0, 0].set(-b[1])
  if n == 1:
    return c
  c = c.at[1, 0].set(1)
  for k in range(2, n + 1):
    row, col = (k - 2, k - 1) if k % 2 == 0 else (k - 1, k - 2)
    c = c.at[row, col].set(-b[k])
  for i in range(n):
    j = i + 2 if i % 2 == 0 else i - 2
    if 0 <= j < n:
      c = c.at[i, j].set(1)
  return c


def convolution_matrix(a, n, mode="full"):
  """The matrix whose product with a vector of length n is its convolution with `a` (a
  batch of them for leading axes of `a`)."""
  from minijax.scipy.linalg import toeplitz
  a = jnp.asarray(a)
  if a.ndim < 1 or a.shape[-1] == 0:
    raise ValueError("convolution_matrix: `a` must have a non-empty last axis; got shape "
                     f"{a.shape}")
  n, m = int(n), a.shape[-1]
  if n <= 0:
    raise ValueError(f"convolution_matrix: n must be positive, got {n}")
  zeros = jnp.zeros((*a.shape[:-1], n - 1), a.dtype)
  full = toeplitz(jnp.concatenate([a, zeros], axis=-1),
                  jnp.concatenate([a[..., :1], zeros], axis=-1))
  if mode == "full":
    return full
  if mode == "same":
    start = (min(n, m) - 1) // 2
    return full[..., start:start + max(n, m), :]
  if mode == "valid":
    return full[..., min(n, m) - 1:max(n, m), :]
  raise ValueError(f"convolution_matrix: mode must be 'full', 'same' or 'valid', got {mode!r}")


def dft(n, scale=None, *, dtype=None):
  """The discrete Fourier transform matrix: exp(-2 pi i j k / n), scaled by 1/sqrt(n)
  ('sqrtn') or 1/n ('n')."""
  n = _size("dft", n)
  if scale not in (None, "sqrtn", "n"):
    raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
  k = np.arange(n)
  m = np.exp(-2j * np.pi * np.outer(k, k) / n)
  if scale is not None:
    m = m / (np.sqrt(n) if scale == "sqrtn" else n)
  return jnp.asarray(m, dtype=dtypes.default_complex_dtype() if dtype is None else dtype)


def hadamard(n, dtype=int):
  """The Hadamard matrix of order n (a power of 2), by Sylvester's construction."""
  n = _size("hadamard", n)
  if n < 1 or n & (n - 1):
    raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
  h = np.ones((1, 1), np.int64)
  while h.shape[0] < n:
    h = np.block([[h, h], [h, -h]])
  return jnp.asarray(h, dtype=dtype)


def hankel(c, r=None):
  """The Hankel matrix with first column `c` and last row `r` (default zeros): entry
  (i, j) is c[i + j] within c, else r[i + j - len(c) + 1]."""
  c = jnp.asarray(c)
  r = jnp.zeros_like(c) if r is None else jnp.asarray(r)
  if c.ndim == 0 or r.ndim == 0:
    raise ValueError("hankel: c and r must be at least one-dimensional; got shapes "
                     f"{c.shape} and {r.shape}")
  dtype = jnp.result_type(c, r)
  n, m = c.shape[-1], r.shape[-1]
  batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
  values = jnp.concatenate([jnp.broadcast_to(c.astype(dtype), (*batch, n)),
                            jnp.broadcast_to(r.astype(dtype), (*batch, m))[..., 1:]], axis=-1)
  return values[..., np.arange(n)[:, None] + np.arange(m)[None, :]]


def helmert(n, full=False):
  """The Helmert matrix of order n (without its first row unless `full`)."""
  n = _size("helmert", n)
  h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
  d = np.arange(n) * np.arange(1, n + 1)
  h[0] = 1
  d[0] = n
  h = h / np.sqrt(d)[:, None]
  return _float(h if full else h[1:])


def hilbert(n):
  """The Hilbert matrix: entry (i, j) is 1 / (i + j + 1)."""
  n = _size("hilbert", n)
  i = np.arange(n)
  return _float(1.0 / (i[:, None] + i[None, :] + 1))


def invhilbert(n):
  """The inverse of the Hilbert matrix, from its exact integer entries."""
  n = _size("invhilbert", n)
  c = math.comb
  return _exact(lambda i, j: (-1) ** (i + j) * (i + j + 1) * c(n + i, n - j - 1)
                * c(n + j, n - i - 1) * c(i + j, i) ** 2, n)


def _pascal_lower(n, sign=False):
  return np.array([[(-1) ** (i + j) * math.comb(i, j) if sign else math.comb(i, j)
                    for j in range(n)] for i in range(n)], dtype=np.float64).reshape(n, n)


def pascal(n, kind=None):
  """The Pascal matrix: 'symmetric' (the default: C(i + j, i)), 'lower' or 'upper'; in
  float32 whatever the x64 setting, as JAX's (whose entries are rounded by its formula;
  these are the exact integers, rounded once)."""
  n = _size("pascal", n)
  kind = "symmetric" if kind is None else kind
  if kind == "symmetric":
    return _exact(lambda i, j: math.comb(i + j, i), n).astype(np.float32)
  if kind in ("lower", "upper"):
    low = _pascal_lower(n)
    return _float(low if kind == "lower" else low.T).astype(np.float32)
  raise ValueError(f"pascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")


def invpascal(n, kind=None):
  """The inverse of `pascal(n, kind)`, exactly."""
  n = _size("invpascal", n)
  kind = "symmetric" if kind is None else kind
  signed = _pascal_lower(n, sign=True)
  if kind == "symmetric":
    return _float(signed.T @ signed)
  if kind in ("lower", "upper"):
    return _float(signed if kind == "lower" else signed.T)
  raise ValueError(f"invpascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")


def leslie(f, s):
  """The Leslie matrix: fecundities `f` in the first row, survivals `s` below the
  diagonal."""
  f, s = jnp.asarray(f), jnp.asarray(s)
  if f.ndim != 1 or s.ndim != 1 or s.shape[0] != f.shape[0] - 1:
    raise ValueError("leslie: f must be one-dimensional and s one entry shorter; got shapes "
                     f"{f.shape} and {s.shape}")
  dtype = jnp.result_type(f, s, 1.0) if not jnp.issubdtype(jnp.result_type(f, s), jnp.inexact) \
      else jnp.result_type(f, s)
  n = f.shape[0]
  below = jnp.pad(jnp.diag(s.astype(dtype)), ((0, 0), (0, 1)))
  return jnp.concatenate([f.astype(dtype)[None, :], below], axis=0)[:n]


def fiedler(a):
  """The Fiedler matrix of `a`: entry (i, j) is |a_i - a_j|."""
  a = jnp.atleast_1d(a)
  return jnp.abs(a[..., :, None] - a[..., None, :])
