"""Array creation: array/asarray, zeros/ones/full(_like), arange, linspace, eye, identity,
tri/tril/triu, meshgrid.

Concrete inputs are built on the host with numpy and placed on the device once; shapes are
always static.  `array` of a (nested) list holding traced values stacks them.

`array`, `asarray` and `arange` of host data return Arrays even inside `jit` (concrete
constants that the jaxpr closes over), as JAX's do, so that ported code can index them with
traced values (`values[i]`); numpy arrays would reject a traced index.  (`linspace`
computes its values with lax operations, traced values inside `jit`.)
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.core.errors import ConcretizationTypeError
from minijax.core.trace import Tracer, eval_trace, is_eval_context, set_current_trace
from minijax.lax.structural import scalar_constant
from minijax.numpy import _util
from minijax.runtime.array import Array
from minijax.lax.sharding import takes_out_sharding



def placed(make):
  """`make`, which returns an array, given JAX's keyword-only `device=` (the result put
  there: a Device or a Sharding, `minijax.device_put`'s) and `out_sharding=`
  (`lax.sharding.constrain_to`)."""
  make = takes_out_sharding(make)
  signature = inspect.signature(make)

  @functools.wraps(make)
  def made(*args, device=None, **kwargs):
    out = make(*args, **kwargs)
    if device is None:
      return out
    from minijax.placement import device_put
    return device_put(out, device)

  parameters = list(signature.parameters.values())
  keyword = inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default=None)
  made.__signature__ = signature.replace(parameters=[*parameters[:-1], keyword, parameters[-1]])
  return made


def _canonical(dtype, where: str):
  """The dtype the user asked for in `where`: a 64-bit one without x64 warns (or raises,
  under `jax_explicit_x64_dtypes='error'`; kept under `'allow'`), as in JAX."""
  return dtypes.canonicalize_user_dtype(dtype, where) if dtype is not None else None


def _typed_constant(host: np.ndarray):
  """`_constant` of host data already in the dtype asked for: a 64-bit one here is explicit
  (under jax_explicit_x64_dtypes='allow') and kept."""
  if host.dtype != dtypes.float0 and dtypes.canonicalize_dtype(host.dtype) != host.dtype:
    return lax.wide_constant(host)
  return _constant(host)


def _constant(host):
  """Host data as an array: an Array, also under a trace (placed on the device by the eval
  trace, so the trace sees a constant it can close over); under `jit` a 0-d value is a
  tracer of a literal of the jaxpr and a numpy array one of a constant of the jaxpr, the
  same constant for the same array (`scalar_constant`), as in JAX."""
  if is_eval_context() or hasattr(host, "aval") and not isinstance(host, np.ndarray):
    return lax.convert_to_array(host)
  if np.ndim(host) == 0 or isinstance(host, np.ndarray):
    return scalar_constant(lax.convert_to_array(host))
  with set_current_trace(eval_trace()):
    return lax.convert_to_array(host)


def _contains_traced(obj) -> bool:
  if isinstance(obj, (list, tuple)):
    return any(_contains_traced(o) for o in obj)
  return (isinstance(obj, Tracer) or (hasattr(obj, "aval") and not isinstance(obj, np.ndarray))
          or hasattr(obj, "__jax_array__"))


def _check_order(order, name: str) -> None:
  if order is not None and order != "K" and order != "C":
    raise NotImplementedError(f"jnp.{name}: only order='K' or 'C' is supported (arrays have "
                              f"one layout here), got order={order!r}")


@placed
def array(object, dtype=None, copy=True, order="K", ndmin=0):
  _check_order(order, "array")
  dtype = _canonical(dtype, "array")
  if dtype == dtypes.float0 and not _contains_traced(object):
    # float0 values hold no data: numpy reads any bytes-like value (`b''`) as JAX does
    object, dtype = np.array(object, dtypes.float0), None
  if isinstance(object, (list, tuple)):
    if _contains_traced(object):
      from minijax.numpy.shape import stack
      parts = [array(o) for o in object]
      if not parts:
        out = _util.asarray(np.array([], dtype or dtypes.default_float_dtype()))
      else:
        out = stack(parts)
      if dtype is not None:
        out = lax.convert_element_type(out, dtype)
    else:
      host = np.array(object)
      if host.dtype == object:
        raise TypeError(f"array: cannot make an array from {object!r:.60}")
      if host.dtype.kind == "U" or host.dtype.kind == "S":
        raise TypeError(f"array: strings are not valid minijax values ({object!r:.60})")
      out = _typed_constant(np.asarray(host, dtype or dtypes.canonicalize_dtype(host.dtype)))
  else:
    object, = _util.arrays_of("array", (object,))
    if isinstance(object, dtypes.PYTHON_SCALARS):
      dt, weak = dtypes.dtype_and_weak_type(object)
      out = lax.full((), object, dtype or dt, weak_type=weak and dtype is None)
    else:
      out = _constant(object)
      if dtype is not None:
        out = lax.convert_element_type(out, dtype)
  nd = _util.ndim(out)
  if ndmin > nd:
    out = lax.reshape(out, (1,) * (ndmin - nd) + _util.shape(out))
  if copy and out is object and not isinstance(out, Tracer):
    out = out.copy()  # as in JAX: a buffer of its own, which donating `object` leaves alive
  return out


@placed
def asarray(a, dtype=None, order=None, *, copy=None):
  _check_order(order, "asarray")
  # a Python scalar with a dtype is made in that dtype (2998342421 as uint32 is no int32)
  if isinstance(a, (list, tuple)) or (dtype is not None and type(a) in dtypes.PYTHON_SCALARS):
    return array(a, dtype)
  a, = _util.arrays_of("asarray", (a,))
  out = _constant(a)
  if dtype is not None:
    out = lax.convert_element_type(out, _canonical(dtype, "asarray"))
  return out


@placed
def full(shape, fill_value, dtype=None):
  """As JAX: without `dtype`, a weakly typed fill value (a Python scalar) gives a weakly
  typed array."""
  shape = _util.shape_argument(shape)
  _util.check("full", fill_value)
  weak = False
  if dtype is None:
    dtype, weak = dtypes.dtype_and_weak_type(fill_value)
  dtype = _canonical(dtype, "full")
  if _util.ndim(fill_value) == 0:
    return lax.full(shape, fill_value, dtype, weak_type=weak)
  return _util.broadcast_to(lax.convert_element_type(fill_value, dtype, weak), shape)


@placed
def zeros(shape, dtype=None):
  return lax.full(_util.shape_argument(shape), 0,
                  _canonical(dtype, "zeros") or dtypes.default_float_dtype())


@placed
def ones(shape, dtype=None):
  return lax.full(_util.shape_argument(shape), 1,
                  _canonical(dtype, "ones") or dtypes.default_float_dtype())


@placed
def empty(shape, dtype=None):
  return zeros(shape, dtype)


def _like(name, a, dtype, shape):
  """The shape, dtype and weak type of a `*_like` result: `a`'s, unless given (an explicit
  dtype is strong; without one the result is weak when `a` is, as in JAX)."""
  (a,) = _util.arrays_of(name, (a,))
  aval = get_aval(a)
  return (_util.shape_argument(shape) if shape is not None else aval.shape,
          _canonical(dtype, name) or aval.dtype, dtype is None and aval.weak_type)


def _laid_out_like(out, a, shape, weak):
  """`out` (made like `a`) with `a`'s sharding when `a` is an Array laid out over several
  devices (`_sharding`; always committed), not weakly typed, and `out` keeps its shape, as
  JAX's `*_like` (optax's optimizer states follow their sharded parameters)."""
  if (shape is None and not weak and type(a) is Array and a._sharding is not None
      and isinstance(out, Array)):
    from minijax.placement import device_put
    return device_put(out, a.sharding)
  return out


@placed
def zeros_like(a, dtype=None, shape=None):
  out_shape, dtype, weak = _like("zeros_like", a, dtype, shape)
  return _laid_out_like(lax.full(out_shape, 0, dtype, weak_type=weak), a, shape, weak)


@placed
def ones_like(a, dtype=None, shape=None):
  out_shape, dtype, weak = _like("ones_like", a, dtype, shape)
  return _laid_out_like(lax.full(out_shape, 1, dtype, weak_type=weak), a, shape, weak)


@placed
def empty_like(prototype, dtype=None, shape=None):
  return zeros_like(prototype, dtype, shape)


@placed
def full_like(a, fill_value, dtype=None, shape=None):
  out_shape, dtype, weak = _like("full_like", a, dtype, shape)
  if _util.ndim(fill_value) == 0:
    out = lax.full(out_shape, fill_value, dtype, weak_type=weak)
  else:
    out = _util.broadcast_to(lax.convert_element_type(fill_value, dtype, weak), out_shape)
  return _laid_out_like(out, a, shape, weak)


def _concrete(name, x):
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          x, f"{name}()", hint=f"{name} needs concrete arguments to know its result's shape. ")
    return np.asarray(value).item()
  if hasattr(x, "aval"):
    return np.asarray(x).item()
  return x


@placed
def arange(start, stop=None, step=None, dtype=None):
  start = _concrete("arange", start)
  stop = _concrete("arange", stop) if stop is not None else None
  step = _concrete("arange", step) if step is not None else None
  if stop is None and step is None:
    host_dtype = np.arange(start).dtype
    n = len(range(int(np.ceil(start)))) if start > 0 else 0
    dt = _canonical(dtype, "arange") or dtypes.canonicalize_dtype(host_dtype)
    if dt in (dtypes.int32, dtypes.int64) and isinstance(start, (int, np.integer)):
      return lax.iota(dt, n)
    return _typed_constant(np.arange(start, dtype=dt))
  host = np.arange(start, stop, step)
  dt = _canonical(dtype, "arange") or dtypes.canonicalize_dtype(host.dtype)
  return _typed_constant(np.arange(start, stop, step).astype(dt))


@placed
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
  """`num` evenly spaced values from `start` to `stop`, computed as JAX does (so the values
  are JAX's, bit for bit): in the result's inexact dtype, each value is
  `start * (1 - t) + stop * t` with `t = i / div` in the real dtype, and `stop` itself is
  appended when `endpoint`.  `start` and `stop` may be arrays (broadcast together)."""
  num = int(_concrete("linspace", num))
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  return _linspace(start, stop, num, bool(endpoint), bool(retstep), _canonical(dtype, "linspace"),
                   int(_concrete("linspace", axis)))


@_util.compiled_when_eager(dynamic=2)
def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
  from minijax.numpy.ufuncs import add, multiply, subtract
  _util.check("linspace", start, stop)
  if dtype is None:
    dtype = _util.result_type_of(start, stop)[0]
    dtype = dtype if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()
  compute = dtype if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()
  s, e = (lax.convert_element_type(_util.asarray(v), compute) for v in (start, stop))
  bounds = list(_util.broadcast_shapes("linspace", _util.shape(s), _util.shape(e)))
  s, e = _util.broadcast_to(s, bounds), _util.broadcast_to(e, bounds)
  axis = len(bounds) + axis + 1 if axis < 0 else axis
  out_bounds = bounds[:axis] + [1] + bounds[axis:]
  div = (num - 1) if endpoint else num
  if num > 1:
    delta = lax.div(subtract(e, s), lax.full((), div, compute))
    real = _util.dtype(lax.abs(lax.full((), 0, compute)))
    iota_shape = [1] * len(out_bounds)
    iota_shape[axis] = div
    t = lax.div(lax.reshape(lax.iota(real, div), iota_shape), lax.full((), div, real))
    t = lax.convert_element_type(t, compute)
    out = add(multiply(lax.reshape(s, out_bounds), subtract(1, t)),
              multiply(lax.reshape(e, out_bounds), t))
    if endpoint:
      out = lax.concatenate([out, lax.reshape(e, out_bounds)], axis)
  elif num == 1:
    delta = lax.full((), np.nan, compute) if endpoint else subtract(e, s)
    out = lax.reshape(s, out_bounds)
  else:
    delta = lax.full((), np.nan, compute)
    out = lax.full(bounds[:axis] + [0] + bounds[axis:], 0, compute)
  if dtypes.is_integer(dtype):
    out = lax.floor(out)
  out = lax.convert_element_type(out, dtype)
  return (out, delta) if retstep else out


@placed
def eye(N, M=None, k=0, dtype=None):
  (N,) = _util.shape_argument(N)
  (M,) = (N,) if M is None else _util.shape_argument(M)
  dt = _canonical(dtype, "eye") or dtypes.default_float_dtype()
  rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
  cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
  on = lax.eq(lax.add(rows, lax.full((N, M), int(k), dtypes.int32)), cols)
  return lax.convert_element_type(on, dt)


def identity(n, dtype=None):
  return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
  (N,) = _util.shape_argument(N)
  (M,) = (N,) if M is None else _util.shape_argument(M)
  rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
  cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
  mask = lax.ge(lax.add(rows, lax.full((N, M), int(k), dtypes.int32)), cols)
  return lax.convert_element_type(mask, _canonical(dtype, "tri") or dtypes.float32)  # (JAX's)


def _tri_mask(m, k, lower):
  n_rows, n_cols = _util.shape(m)[-2:]
  rows = lax.broadcasted_iota(dtypes.int32, (n_rows, n_cols), 0)
  cols = lax.broadcasted_iota(dtypes.int32, (n_rows, n_cols), 1)
  shifted = lax.add(rows, lax.full((n_rows, n_cols), int(k), dtypes.int32))
  return lax.ge(shifted, cols) if lower else lax.le(shifted, cols)


def tril(m, k=0):
  from minijax.numpy.ufuncs import where
  m = _util.asarray(m)
  return where(_tri_mask(m, k, True), m, lax.full((), 0, _util.dtype(m)))


def triu(m, k=0):
  from minijax.numpy.ufuncs import where
  m = _util.asarray(m)
  return where(_tri_mask(m, k - 1, True), lax.full((), 0, _util.dtype(m)), m)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
  """Coordinate grids of the 1-d `xi` ("xy": the first two axes swapped, as numpy); with
  `sparse`, each keeps its own axis only."""
  if indexing not in ("xy", "ij"):
    raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  arrays = [_util.asarray(x) for x in xi]
  if any(_util.ndim(a) != 1 for a in arrays):
    raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                     f"{[_util.shape(a) for a in arrays]}")
  shape = [_util.shape(a)[0] for a in arrays]
  if indexing == "xy" and len(arrays) >= 2:
    shape[0], shape[1] = shape[1], shape[0]
  outs = []
  for i, a in enumerate(arrays):
    axis = i
    if indexing == "xy" and len(arrays) >= 2 and i < 2:
      axis = 1 - i
    if sparse:
      target = [1] * len(arrays)
      target[axis] = shape[axis]
      outs.append(lax.reshape(a, tuple(target)))
    else:
      outs.append(lax.broadcast_in_dim(a, tuple(shape), (axis,)))
  return outs


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
  """`num` numbers spaced evenly on a log scale from `start` to `stop` (signs kept)."""
  import minijax.numpy as jnp
  start, stop = _util.promote_inexact("geomspace", start, stop)
  sign = jnp.sign(start)
  logs = jnp.linspace(jnp.log10(start / sign), jnp.log10(stop / sign), num,
                      endpoint=endpoint, axis=axis)
  out = sign * jnp.power(10.0, logs).astype(_util.dtype(start))
  if num > 0:
    out = out.at[(slice(None),) * axis + (0,)].set(start) if axis >= 0 else out
    if endpoint and num > 1:
      out = out.at[(slice(None),) * axis + (-1,)].set(stop)
  return out if dtype is None else out.astype(dtype)


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """`function(*indices)` over a grid of `shape` (indices of `dtype`), vectorized."""
  import minijax.numpy as jnp
  shape = tuple(int(d) for d in shape)
  grids = jnp.indices(shape, dtype=dtype)
  return function(*grids, **kwargs)
