"""Activation functions, softmax and friends, one-hot encoding and standardization.

Each is a short composition of `minijax.numpy` and `minijax.lax` operations, written with
JAX's formulas so that the numbers agree with JAX's: softplus is `logaddexp(x, 0)`, elu
evaluates `expm1` only where it is selected (so its gradient is finite everywhere),
`gelu(approximate=False)` uses `erfc`.  relu and relu6 have custom derivatives that are
zero at their kinks (JAX's choice), and softmax a custom jvp `y * (t - sum(y * t))` that
never differentiates through its max-shift.  Masked (`where=`) entries of softmax are 0 and
of log_softmax are -inf.  Everything runs eagerly and under every transformation.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._util import compiled_when_eager
from minijax.config import config
from minijax.core import dtypes
from minijax.custom_derivatives import custom_jvp
from minijax.scipy.special import logsumexp  # jax.nn.logsumexp is jax.scipy's

__all__ = ["identity", "relu", "relu6", "sigmoid", "softplus", "sparse_plus", "soft_sign",
           "sparse_sigmoid", "silu", "swish", "mish", "log_sigmoid", "elu", "leaky_relu",
           "hard_tanh", "celu", "selu", "gelu", "glu", "hard_sigmoid", "hard_silu",
           "hard_swish", "squareplus", "logsumexp", "logmeanexp", "log_softmax", "softmax",
           "standardize", "one_hot", "tanh"]

tanh = jnp.tanh


def _array(name: str, x):
  if not hasattr(x, "aval") and not isinstance(x, (np.ndarray, np.generic, int, float, bool)):
    raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(x).__name__}")
  return jnp.asarray(x)


def _inexact(name: str, x):
  x = _array(name, x)
  return x.astype(dtypes.to_inexact_dtype(x.dtype))


def identity(x):
  """Returns `x` unchanged (as an array)."""
  return _array("identity", x)


@custom_jvp
def relu(x):
  """max(x, 0), whose derivative at 0 is taken to be 0."""
  return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
def relu6(x):
  """min(max(x, 0), 6), whose derivative at 0 and at 6 is taken to be 0."""
  return jnp.minimum(jnp.maximum(x, 0), 6.0)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))


def sigmoid(x):
  """1 / (1 + exp(-x))."""
  return lax.logistic(_inexact("sigmoid", x))


def softplus(x):
  """log(1 + exp(x)), computed as logaddexp(x, 0)."""
  return jnp.logaddexp(x, 0)


def sparse_plus(x):
  """0 below -1, (x + 1)^2 / 4 between -1 and 1, x above 1."""
  x = _array("sparse_plus", x)
  return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def soft_sign(x):
  """x / (|x| + 1)."""
  x = _array("soft_sign", x)
  return x / (jnp.abs(x) + 1)


def sparse_sigmoid(x):
  """The derivative of sparse_plus: 0, (x + 1) / 2 or 1."""
  return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


def silu(x):
  """x * sigmoid(x) (also called swish)."""
  x = _array("silu", x)
  return x * sigmoid(x)


swish = silu


def mish(x):
  """x * tanh(softplus(x))."""
  x = _array("mish", x)
  return x * jnp.tanh(softplus(x))


def log_sigmoid(x):
  """log(sigmoid(x)) = -softplus(-x)."""
  x = _array("log_sigmoid", x)
  return -softplus(-x)


def log1mexp(x):
  """log(1 - exp(-x)) for x > 0, from whichever of log(-expm1(-x)) (x below log 2) and
  log1p(-exp(-x)) (above) keeps its precision."""
  x = _array("log1mexp", x)
  small = x < np.log(2)
  return jnp.where(small, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def elu(x, alpha=1.0):
  """x where x > 0, alpha * (exp(x) - 1) elsewhere."""
  x = _array("elu", x)
  return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


def leaky_relu(x, negative_slope=1e-2):
  """x where x >= 0, negative_slope * x elsewhere."""
  x = _array("leaky_relu", x)
  return jnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
  """x clipped to [-1, 1]."""
  x = _array("hard_tanh", x)
  return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def celu(x, alpha=1.0):
  """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)."""
  return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
  """scale * elu(x, alpha) with the self-normalizing constants."""
  return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate: bool = True):
  """x * Phi(x) (Phi: the standard normal CDF), or its tanh approximation."""
  x = _inexact("gelu", x)
  if approximate:
    sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
    cdf = 0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
    return x * cdf
  sqrt_half = np.sqrt(0.5).astype(x.dtype)
  return jnp.asarray(0.5 * x * lax.erfc(-x * sqrt_half), dtype=x.dtype)


def glu(x, axis: int = -1):
  """The first half of `x` along `axis` gated by the sigmoid of the second half."""
  x = _array("glu", x)
  if x.shape[axis] % 2:
    raise ValueError(f"glu: axis {axis} of {x.shape} must have an even size")
  x1, x2 = jnp.split(x, 2, axis)
  return x1 * sigmoid(x2)


def hard_sigmoid(x):
  """relu6(x + 3) / 6."""
  return relu6(x + 3.0) / 6.0


def hard_silu(x):
  """x * hard_sigmoid(x)."""
  x = _array("hard_silu", x)
  return x * hard_sigmoid(x)


hard_swish = hard_silu


@compiled_when_eager(dynamic=1)
def squareplus(x, b=4):
  """(x + sqrt(x^2 + b)) / 2 (one compiled call when eager, as JAX's jitted one: XLA fuses
  x^2 + b into one multiply-add there)."""
  x = _array("squareplus", x)
  return (x + jnp.sqrt(jnp.square(x) + b)) / 2


# ----------------------------------------------------------------------------- reductions

def _axes(x, axis) -> tuple[int, ...]:
  if axis is None:
    return tuple(range(x.ndim))
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  return tuple(sorted(int(a) % x.ndim if x.ndim else 0 for a in axes))


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
  """logsumexp(x) - log(n), n the number of (unmasked) reduced elements."""
  lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
  x = jnp.asarray(x)
  if where is None:
    count = int(np.prod([x.shape[a] for a in _axes(x, axis)], dtype=np.int64))
    return lse - jnp.log(jnp.asarray(count, dtype=lse.dtype))
  count = jnp.sum(jnp.broadcast_to(where, x.shape), axis=axis, keepdims=keepdims)
  return lse - jnp.log(count.astype(lse.dtype))


def log_softmax(x, axis=-1, where=None):
  """x - logsumexp(x) along `axis`; masked-out entries are -inf."""
  x = _array("log_softmax", x)
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  shifted = x_safe - lax.stop_gradient(x_max)
  shifted_logsumexp = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
  result = shifted - shifted_logsumexp
  if where is not None:
    return jnp.where(where, result, -np.inf)
  return result


def softmax(x, axis=-1, where=None):
  """exp(x) / sum(exp(x)) along `axis` (an int, a tuple, or None for all axes); masked-out
  entries are 0."""
  x = _array("softmax", x)
  axis = axis if axis is None or isinstance(axis, (int, np.integer)) else tuple(axis)
  where = None if where is None else jnp.asarray(where)
  if config.softmax_custom_jvp:
    return _softmax(x, axis, where)
  return _softmax_through(x, axis, where)


def _softmax_through(x, axis, where):
  # JAX 0.10.2's default: differentiated through exp, sum and divide, the maximum held
  # constant (so its gradients round as JAX's)
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  unnormalized = jnp.exp(x_safe - lax.stop_gradient(x_max))
  result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
  return result if where is None else jnp.where(where, result, 0)


_softmax = custom_jvp(_softmax_through, nondiff_argnums=(1,))  # (softmax_custom_jvp)


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
  (x, where), (t, _) = primals, tangents
  y = _softmax(x, axis, where)
  return y, y * (t - (y * t).sum(axis, where=where, keepdims=True))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
  """(x - mean) / sqrt(variance + epsilon), the moments along `axis` unless given;
  algorithm 'fast' uses mean(x^2) - mean(x)^2 (clipped at 0), 'stable' mean((x - mean)^2)."""
  x = _array("standardize", x)
  if mean is None:
    mean = jnp.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    if algorithm == "stable":
      variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True, where=where)
    elif algorithm == "fast":
      variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
      variance = jnp.clip(variance, 0)
    else:
      raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
  return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
  """A `num_classes`-long vector per index in `x` (placed at `axis` of the result), 1 at
  the index and 0 elsewhere; out-of-range indices give all zeros."""
  num_classes = int(num_classes)
  x = jnp.asarray(x)
  dtype = dtypes.default_float_dtype() if dtype is None else dtype
  out_axis = int(axis) % (x.ndim + 1) if -(x.ndim + 1) <= int(axis) <= x.ndim else None
  if out_axis is None:
    raise ValueError(f"one_hot axis {axis} is out of bounds for a result of rank {x.ndim + 1}")
  lhs = lax.expand_dims(x, (out_axis,))
  shape = [1] * x.ndim
  shape.insert(out_axis, num_classes)
  rhs = lax.broadcasted_iota(x.dtype, tuple(shape), out_axis)
  return (lhs == rhs).astype(dtype)
