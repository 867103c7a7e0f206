"""`minijax.image`: JAX's image resizing, `resize` and `scale_and_translate`.

Resampling is separable: along each resized dimension the output is the input contracted
with a weight matrix (input size x output size).  Output sample j sits at input coordinate
`(j + 0.5 - translation) / scale - 0.5`; its weights are the method's kernel at the
distances to the input samples, the kernel stretched by `1 / scale` when shrinking with
`antialias` (so that it averages what it skips), normalized to sum to one, and zero for
samples that fall outside the input.  `nearest` takes the input sample under each output
sample's centre instead.  Kernels: `linear` (the triangle), `cubic` (Keys' with a = -0.5,
`ResizeMethod.CUBIC_PYTORCH` with a = -0.75), `lanczos3` and `lanczos5` (windowed sincs).
"""
from __future__ import annotations

import enum
from typing import Sequence

import numpy as np

from minijax import lax
from minijax import numpy as jnp

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
  """How `resize` and `scale_and_translate` interpolate (JAX's names)."""
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str) -> "ResizeMethod":
    names = {"nearest": "NEAREST", "linear": "LINEAR", "bilinear": "LINEAR",
             "trilinear": "LINEAR", "triangle": "LINEAR", "lanczos3": "LANCZOS3",
             "lanczos5": "LANCZOS5", "cubic": "CUBIC", "bicubic": "CUBIC",
             "tricubic": "CUBIC", "area": "AREA"}
    if s not in names:
      raise ValueError(f'Unknown resize method "{s}"')
    return ResizeMethod[names[s]]


def _keys_cubic(a):
  def kernel(x):
    x = jnp.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return jnp.where(x <= 1, near, jnp.where(x < 2, far, 0.0))
  return kernel


def _lanczos(radius):
  def kernel(x):
    return jnp.where(jnp.abs(x) < radius, jnp.sinc(x) * jnp.sinc(x / radius), 0.0)
  return kernel


_KERNELS = {
    ResizeMethod.LINEAR: lambda x: jnp.maximum(0.0, 1 - jnp.abs(x)),
    ResizeMethod.CUBIC: _keys_cubic(-0.5),
    ResizeMethod.CUBIC_PYTORCH: _keys_cubic(-0.75),
    ResizeMethod.LANCZOS3: _lanczos(3.0),
    ResizeMethod.LANCZOS5: _lanczos(5.0),
}


def _weights(in_size, out_size, scale, translation, kernel, antialias, dtype):
  """The (in_size, out_size) resampling weights of one dimension."""
  stretch = jnp.maximum(1 / scale, 1.0) if antialias else 1.0
  at = (jnp.arange(out_size, dtype=dtype) + 0.5 - translation) / scale - 0.5
  distance = jnp.abs(at[None, :] - jnp.arange(in_size, dtype=dtype)[:, None]) / stretch
  weights = kernel(distance)
  total = jnp.sum(weights, axis=0, keepdims=True)
  weights = jnp.where(jnp.abs(total) > 1000 * jnp.finfo(dtype).eps,
                      weights / jnp.where(total != 0, total, 1), 0.0)
  inside = (at >= -0.5) & (at <= in_size - 0.5)
  return jnp.where(inside[None, :], weights, 0.0).astype(dtype)


def _method(method) -> ResizeMethod:
  return method if isinstance(method, ResizeMethod) else ResizeMethod.from_string(method)


def scale_and_translate(image, shape: Sequence[int], spatial_dims: Sequence[int], scale,
                        translation, method, antialias: bool = True,
                        precision=lax.Precision.HIGHEST):
  """`image` resampled to `shape` along `spatial_dims`, each scaled by `scale` and shifted by
  `translation` (output coordinate = input coordinate * scale + translation)."""
  method = _method(method)
  if method in (ResizeMethod.NEAREST, ResizeMethod.AREA):
    raise ValueError(f"scale_and_translate does not support {method}; use linear, cubic or "
                     "lanczos")
  image = jnp.asarray(image)
  dtype = image.dtype if jnp.issubdtype(image.dtype, jnp.inexact) else jnp.float32
  out = image.astype(dtype)
  scale, translation = jnp.asarray(scale, dtype), jnp.asarray(translation, dtype)
  for k, dim in enumerate(spatial_dims):
    dim = dim % image.ndim
    w = _weights(image.shape[dim], shape[dim], scale[k], translation[k], _KERNELS[method],
                 antialias, dtype)
    out = jnp.moveaxis(jnp.tensordot(out, w, axes=([dim], [0]), precision=precision), -1, dim)
  return out


def _resize_nearest(image, shape):
  out = image
  for dim, (n_in, n_out) in enumerate(zip(image.shape, shape)):
    if n_in != n_out:
      index = np.floor((np.arange(n_out) + 0.5) * n_in / n_out).astype(np.int32)
      out = jnp.take(out, np.minimum(index, n_in - 1), axis=dim)
  return out


def resize(image, shape: Sequence[int], method, antialias: bool = True,
           precision=lax.Precision.HIGHEST):
  """`image` resampled to `shape` (same rank) by `method` ('nearest', 'linear', 'cubic',
  'lanczos3', 'lanczos5', a `ResizeMethod`)."""
  image = jnp.asarray(image)
  shape = tuple(int(d) for d in shape)
  if len(shape) != image.ndim:
    raise ValueError(f"shape must have length equal to the number of dimensions of x; "
                     f"{shape} vs {image.shape}")
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    return _resize_nearest(image, shape)
  if method == ResizeMethod.AREA:
    raise NotImplementedError("resize: method 'area' is not implemented (nor in JAX)")
  dims = [d for d in range(image.ndim) if image.shape[d] != shape[d]]
  if not dims:
    return image if jnp.issubdtype(image.dtype, jnp.inexact) else image.astype(jnp.float32)
  scale = [shape[d] / image.shape[d] for d in dims]
  return scale_and_translate(image, shape, dims, scale, [0.0] * len(dims), method, antialias,
                             precision)
