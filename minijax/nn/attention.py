"""`dot_product_attention`: softmax(Q K^T * scale + bias, masked) V, for each head, with
JAX's signature, shapes and masking rules.

Shapes use JAX's letters: B batch, T query length, S key/value length, N query heads, K
key/value heads (N a multiple of K: each key/value head serves N // K query heads, grouped
query attention), H head size.  Queries are `BTNH` (or `TNH`), keys and values `BSKH` (or
`SKH`).  The logits are `BNTS` (the query heads split into K groups of N // K); a position
takes part unless a mask excludes it: `mask` (True takes part), `is_causal` (key position
at most the query position), `query_seq_lengths` / `key_value_seq_lengths` (positions
beyond a batch element's length), `local_window_size` (keys within (left, right) of the
query).  Excluded logits become a large negative number (0.7 of the dtype's lowest), so a
row with nothing left spreads its attention evenly, and the outputs of queries beyond
`query_seq_lengths` are zero, as in JAX's XLA implementation.  Low-precision inputs are
multiplied with float32 accumulation and the softmax runs in float32.
"""
from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.nn.functions import logsumexp, softmax


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
  """Scaled dot-product attention of `query` over `key` and `value` (see the module
  docstring); with `return_residual`, also the logsumexp of each row of logits (`BTN`)."""
  if implementation == "cudnn":  # (JAX's error on a machine without a GPU)
    raise RuntimeError("cuDNN is not detected: dot_product_attention's implementation="
                       "'cudnn' needs an NVIDIA GPU; use None or 'xla'")
  if implementation not in (None, "xla"):
    raise ValueError(f"Unsupported implementation option: {implementation}; "
                     "use None, 'xla' or 'cudnn'")
  out_shape = jnp.shape(query)
  q, k, v = (_four_d(jnp.asarray(t)) for t in (query, key, value))
  b, s, kh, h = k.shape
  _check("value", v, (b, s, kh, h), k.dtype)
  _check("query", q, (b, -1, -1, h), k.dtype)
  t, n = q.shape[1], q.shape[2]
  if n % kh:
    raise ValueError(f"The number of query heads must be a multiple of key/value heads, but "
                     f"got {n} vs {kh}")
  bias = None if bias is None else _four_d(jnp.asarray(bias))
  mask = None if mask is None else _four_d(jnp.asarray(mask))
  _check("mask", mask, (-1,) * 4, np.dtype(bool))
  _check("bias", bias, (-1,) * 4, None)
  for name, lengths in (("query_seq_lengths", query_seq_lengths),
                        ("key_value_seq_lengths", key_value_seq_lengths)):
    if lengths is not None:
      _check(name, jnp.asarray(lengths), (b,), np.dtype(np.int32))
  scale = 1.0 / math.sqrt(h) if scale is None else scale

  narrow = q.dtype in (jnp.bfloat16, np.float16)
  groups = q.reshape(b, t, kh, n // kh, h)
  logits = jnp.einsum("BTKGH,BSKH->BKGTS", groups, k,
                      preferred_element_type=np.float32 if narrow else None)
  logits = (logits * scale).reshape(b, n, t, s)
  if bias is not None:
    logits = (logits + bias).astype(logits.dtype)
  keep = _positions_kept(b, t, s, mask, is_causal, query_seq_lengths, key_value_seq_lengths,
                         local_window_size)
  if keep is not None:
    logits = jnp.where(keep, logits, 0.7 * float(jnp.finfo(logits.dtype).min))
  logits32 = logits.astype(np.float32)
  probs = softmax(logits32, axis=-1).astype(k.dtype)
  out = jnp.einsum("BKGTS,BSKH->BTKGH", probs.reshape(b, kh, n // kh, t, s), v)
  out = out.reshape(b, t, n, h)
  if query_seq_lengths is not None:  # padded queries attend to nothing
    valid = lax.broadcasted_iota(np.int32, (b, t), 1) < jnp.asarray(query_seq_lengths)[:, None]
    out = out * valid[:, :, None, None].astype(out.dtype)
  out = out.reshape(out_shape)
  if not return_residual:
    return out
  residual = jnp.moveaxis(logsumexp(logits32, axis=-1), 1, 2)  # BNT -> BTN
  return out, residual.reshape(out_shape[:-1])


def _four_d(x):
  return x.reshape((1,) * (4 - x.ndim) + x.shape) if x.ndim < 4 else x


def _check(name: str, x, shape, dtype) -> None:
  if x is None:
    return
  if x.ndim != len(shape):
    raise ValueError(f"{name} ndim should be {len(shape)}, but got {x.ndim}")
  if dtype is not None and x.dtype != dtype:
    raise ValueError(f"{name} dtype should be {dtype}, but got {x.dtype}")
  if any(want != -1 and got != want for got, want in zip(x.shape, shape)):
    raise ValueError(f"{name} shape should be {list(shape)}: but got {x.shape}")


def _positions_kept(b, t, s, mask, is_causal, query_lengths, kv_lengths, window):
  """The BNTS (broadcastable) mask of the logits that take part, or None for all."""
  keep = None

  def both(a, c):
    return c if a is None else jnp.logical_and(a, c)

  if mask is not None:
    keep = mask
  query_at = lax.broadcasted_iota(np.int32, (t, s), 0)
  key_at = lax.broadcasted_iota(np.int32, (t, s), 1)
  if is_causal:
    keep = both(keep, (key_at <= query_at)[None, None])
  if window is not None:
    left, right = (window, window) if isinstance(window, int) else window
    keep = both(keep, ((query_at - left <= key_at) & (key_at <= query_at + right))[None, None])
  if query_lengths is not None:
    rows = lax.broadcasted_iota(np.int32, (b, t), 1) < jnp.asarray(query_lengths)[:, None]
    keep = both(keep, rows[:, None, :, None])
  if kv_lengths is not None:
    cols = lax.broadcasted_iota(np.int32, (b, s), 1) < jnp.asarray(kv_lengths)[:, None]
    keep = both(keep, cols[:, None, None, :])
  return keep
