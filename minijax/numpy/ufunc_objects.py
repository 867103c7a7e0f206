"""`jnp.ufunc`: numpy's ufunc methods (`reduce`, `accumulate`, `at`, `reduceat`, `outer`) on
minijax's elementwise functions, and on Python functions through `frompyfunc`.

A `ufunc` wraps an elementwise function.  Each method has a generic form built from that
function alone, exact whatever the function (it need not associate): `reduce` and
`accumulate` scan along the axis in order, `at` applies the function at each index in turn
(repeated indices compound, out-of-bounds ones are dropped), `reduceat` folds each segment
in one pass over the axis.  The ufuncs of `minijax.numpy` name faster forms where JAX has
them (`add.reduce` is `sum`, `add.at` a scatter-add, ...).  Calling a `frompyfunc` ufunc
vectorizes the scalar function over its broadcast arguments.

As JAX's, the methods return new arrays: `out=` must be None, and `at` needs
`inplace=False`.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.lax.control_flow import scan
from minijax.numpy import _util, reductions, ufuncs
from minijax.numpy.indexing import _getitem
from minijax.numpy.names import logaddexp2 as _logaddexp2
from minijax.numpy.shape import moveaxis
from minijax.numpy.vectorize import vectorize

_AT_NOT_INPLACE = (  # JAX's words
    "Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like\n"
    "np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.\n"
    ">>> arr = jnp.add.at(arr, ind, val, inplace=False)\n")


class ufunc:
  """An elementwise function with numpy's ufunc methods (see the module docstring).

  `ufunc(func, nin, nout, *, name, nargs, identity, call, reduce, accumulate, at, reduceat)`:
  `func` takes `nin` arrays and returns `nout`; `call` and the method arguments are faster
  forms of the call and the methods (None: the generic form)."""

  def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
               name: str | None = None, nargs: int | None = None, identity: Any = None,
               call: Callable | None = None, reduce: Callable | None = None,
               accumulate: Callable | None = None, at: Callable | None = None,
               reduceat: Callable | None = None):
    self.__name__ = self.__qualname__ = name or func.__name__
    self.__doc__ = func.__doc__
    self._props = (func, operator.index(nin), operator.index(nout),
                   operator.index(nargs or nin), identity)
    self._call = call or vectorize(func)
    self._forms = {"reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat}

  _func = property(lambda self: self._props[0])
  nin = property(lambda self: self._props[1])
  nout = property(lambda self: self._props[2])
  nargs = property(lambda self: self._props[3])
  identity = property(lambda self: self._props[4])

  def __repr__(self):
    return f"<jnp.ufunc '{self.__name__}'>"

  def wrapping_call(self, wrap: Callable[[Callable], Callable]) -> "ufunc":
    """This ufunc with its call `c` replaced by `wrap(c)` (its methods unchanged)."""
    func, nin, nout, nargs, identity = self._props
    return ufunc(func, nin, nout, name=self.__name__, nargs=nargs, identity=identity,
                 call=wrap(self._call), **self._forms)

  def __call__(self, *args, out=None, where=None):
    if out is not None:
      raise NotImplementedError(f"out argument of {self}")
    if where is not None:
      raise NotImplementedError(f"where argument of {self}")
    return self._call(*args)

  def _binary(self, method: str) -> None:
    if self.nin != 2:
      raise ValueError(f"{method} only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError(f"{method} only supported for functions returning a single value")

  # ---- reduce

  def reduce(self, a, axis: int | tuple | None = 0, dtype=None, out=None,
             keepdims: bool = False, initial=None, where=None):
    """Folds `a` along `axis` with the function (numpy's `ufunc.reduce`)."""
    self._binary("reduce")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    if initial is not None:
      _util.check(f"{self.__name__}.reduce", initial)
    if where is not None:
      _util.check(f"{self.__name__}.reduce", where)
      if self.identity is None and initial is None:
        raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, "
                         "so to use a where mask one has to specify 'initial'.")
      if _util.dtype(where) != dtypes.bool_:
        raise ValueError(f"where argument must have dtype=bool; got dtype={_util.dtype(where)}")
    form = self._forms["reduce"] or self._reduce_in_order
    return form(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

  def _reduce_in_order(self, a, axis=0, dtype=None, keepdims=False, initial=None,
                       where=None):
    _util.check(f"{self.__name__}.reduce", a)
    a = _util.asarray(a)
    if dtype is not None:
      a = lax.convert_element_type(a, dtypes.canonicalize_user_dtype(dtype))
    if initial is None:
      initial = self.identity
    if where is not None:
      where = _util.broadcast_to(_util.asarray(where), _util.shape(a))
    if axis is None:
      kept_shape = (1,) * _util.ndim(a)
      a = lax.reshape(a, (_util.size(a),))
      where = None if where is None else lax.reshape(where, (_util.size(a),))
      axis = 0
    else:
      if isinstance(axis, tuple):
        if len(axis) != 1:
          raise NotImplementedError(f"{self.__name__}.reduce over a tuple of axes")
        (axis,) = axis
      axis = _util.canonicalize_axes(axis, _util.ndim(a))[0]
      kept_shape = tuple(1 if d == axis else n for d, n in enumerate(_util.shape(a)))
      a = moveaxis(a, axis, 0)
      where = None if where is None else moveaxis(where, axis, 0)
    shape = _util.shape(a)[1:]
    dtype = _util.dtype(a) if dtype is not None else self._result_dtype(a, a)
    a = lax.convert_element_type(a, dtype)
    if _util.shape(a)[0] == 0 or initial is not None:
      if initial is None:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} which has "
                         "no identity")
      start, xs, mask = _util.broadcast_to(_util.to_array(initial, dtype, False), shape), a, where
    else:  # (a where mask comes with an initial value: `reduce` checked)
      start, xs, mask = a[0], a[1:], None

    def step(acc, x):
      value, keep = x
      new = lax.convert_element_type(self(acc, value), dtype)
      return (new if keep is None else lax.select(keep, new, acc)), None

    result, _ = scan(step, start, (xs, mask))
    return lax.reshape(result, kept_shape) if keepdims else result

  def _result_dtype(self, *operands) -> np.dtype:
    """The dtype the function gives for scalars of the operands' dtypes (JAX's: the folds
    compute in it, so a logical function of integers folds booleans)."""
    from minijax.api import eval_shape
    from minijax.core.avals import ShapeDtypeStruct
    return eval_shape(self, *(ShapeDtypeStruct((), _util.dtype(v)) for v in operands)).dtype

  # ---- accumulate

  def accumulate(self, a, axis: int = 0, dtype=None, out=None):
    """The running folds of `a` along `axis` (numpy's `ufunc.accumulate`)."""
    self._binary("accumulate")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
    form = self._forms["accumulate"] or self._accumulate_in_order
    return form(a, axis=axis, dtype=dtype)

  def _accumulate_in_order(self, a, axis=0, dtype=None):
    _util.check(f"{self.__name__}.accumulate", a)
    a = _util.asarray(a)
    if dtype is not None:
      a = lax.convert_element_type(a, dtypes.canonicalize_user_dtype(dtype))
    if axis is None or isinstance(axis, tuple):
      raise ValueError("accumulate does not allow multiple axes")
    axis = _util.canonicalize_axes(axis, _util.ndim(a))[0]
    if _util.shape(a)[axis] == 0:
      return a
    dtype = _util.dtype(a) if dtype is not None else self._result_dtype(a, a)
    rows = moveaxis(lax.convert_element_type(a, dtype), axis, 0)

    def step(acc, x):
      new = lax.convert_element_type(self(acc, x), dtype)
      return new, new

    _, rest = scan(step, rows[0], rows[1:])
    return moveaxis(lax.concatenate([rows[:1], rest], 0), 0, axis)

  # ---- at

  def at(self, a, indices, b=None, /, *, inplace: bool = True):
    """`a` with the function applied at `indices` (with `b`'s values for a binary one),
    repeated indices compounding (numpy's `ufunc.at`, given `inplace=False`)."""
    if inplace:
      raise NotImplementedError(_AT_NOT_INPLACE)
    if b is None and self.nin != 1:
      raise TypeError(f"{self.__name__}.at() needs a second operand b for a binary ufunc")
    if b is not None and self.nin != 2:
      raise ValueError(f"{self.__name__}.at() takes a second operand only for binary ufuncs")
    if self.nout != 1:
      raise ValueError("at only supported for functions returning a single value")
    form = self._forms["at"] or self._at_in_order
    return form(a, indices, *(() if b is None else (b,)))

  def _at_in_order(self, a, indices, *b):
    _util.check(f"{self.__name__}.at", a)
    a = _util.asarray(a)
    dtype = self._result_dtype(a, *b)
    a = lax.convert_element_type(a, dtype)
    b = [lax.convert_element_type(_util.asarray(v), dtype) for v in b]
    shape, size = _util.shape(a), _util.size(a)
    positions, valid = _getitem(lax.reshape(lax.iota(np.int32, size), shape), indices,
                                want_valid=True)
    pshape = _util.shape(positions)
    n = int(np.prod(pshape, dtype=np.int64))
    flat_positions = lax.reshape(positions, (n,))
    keep = (lax.full((n,), True, np.bool_) if valid is None
            else lax.reshape(_util.broadcast_to(valid, pshape), (n,)))
    values = [lax.reshape(_util.broadcast_to(_util.asarray(v), pshape), (n,)) for v in b]

    def step(flat, x):
      position, ok, *value = x
      old = lax.dynamic_index_in_dim(flat, position, keepdims=False,
                                     allow_negative_indices=False)
      new = lax.convert_element_type(self(old, *value), dtype)
      updated = lax.dynamic_update_index_in_dim(flat, lax.broadcast_in_dim(new, (1,), ()),
                                                position, 0, allow_negative_indices=False)
      return lax.select(lax.broadcast_in_dim(ok, (size,), ()), updated, flat), None

    flat, _ = scan(step, lax.reshape(a, (size,)), (flat_positions, keep, *values))
    return lax.reshape(flat, shape)

  # ---- reduceat

  def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
    """Folds of the segments of `a` along `axis` that start at each of `indices` (numpy's
    `ufunc.reduceat`: a segment that does not go forward is its first element)."""
    self._binary("reduceat")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
    form = self._forms["reduceat"] or self._reduceat_in_one_pass
    return form(a, indices, axis=axis, dtype=dtype)

  def _reduceat_in_one_pass(self, a, indices, axis=0, dtype=None):
    _util.check(f"{self.__name__}.reduceat", a, indices)
    a, indices = _util.asarray(a), _util.asarray(indices)
    if dtype is not None:
      a = lax.convert_element_type(a, dtypes.canonicalize_user_dtype(dtype))
    if _util.ndim(a) == 0:
      raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={()}")
    if _util.ndim(indices) != 1:
      raise ValueError(f"reduceat: indices must be one-dimensional, got "
                       f"indices.shape={_util.shape(indices)}")
    if axis is None or isinstance(axis, (tuple, list)):
      raise ValueError("reduceat requires a single integer axis.")
    axis = _util.canonicalize_axes(axis, _util.ndim(a))[0]
    rows = moveaxis(a, axis, 0)
    n, dtype = _util.shape(rows)[0], _util.dtype(a)
    starts = lax.convert_element_type(indices, np.int32)
    ends = lax.concatenate([starts[1:], lax.full((1,), n, np.int32)], 0)
    first = _getitem(rows, starts)[0]  # each segment's first element (or a lone one)
    k = _util.shape(starts)[0]
    bcast = lambda v: lax.broadcast_in_dim(v, (k, *_util.shape(rows)[1:]), (0,))  # noqa: E731

    def step(acc, x):
      j, row = x
      inside = lax.bitwise_and(lax.lt(starts, j), lax.lt(j, ends))
      new = lax.convert_element_type(self(acc, lax.broadcast_in_dim(
          row, _util.shape(acc), tuple(range(1, _util.ndim(acc))))), dtype)
      return lax.select(bcast(inside), new, acc), None

    out, _ = scan(step, first, (lax.iota(np.int32, n), rows))
    return moveaxis(out, 0, axis)

  # ---- outer

  def outer(self, A, B, /):
    """The function of every pair of elements of `A` and `B`: shape `A.shape + B.shape`."""
    self._binary("outer")
    _util.check(f"{self.__name__}.outer", A, B)
    A, B = _util.asarray(A), _util.asarray(B)
    return self(lax.reshape(A, (*_util.shape(A), *(1,) * _util.ndim(B))), B)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity=None) -> ufunc:
  """A `ufunc` of `func`, a function of `nin` scalars returning `nout` values."""
  return ufunc(func, nin, nout, identity=identity)


# ---- minijax.numpy's ufuncs, with JAX's faster forms

def _update_at(method: str):
  def at(a, indices, b):
    return getattr(_util.asarray(a).at[indices], method)(b)
  return at


def _bool_reduction(reduction, combine):
  def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
    a = lax.convert_element_type(_util.asarray(a), np.bool_)
    out = reduction(a, axis=axis, keepdims=keepdims, where=where)
    if initial is not None:  # (folded in with the others: any(...) or initial)
      out = combine(out, lax.convert_element_type(_util.asarray(initial), np.bool_))
    return out if dtype is None else lax.convert_element_type(out, dtypes.canonicalize_user_dtype(dtype))
  return reduce


def _extremum(reduction):
  def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
    a = _util.asarray(a)
    if dtype is not None:
      a = lax.convert_element_type(a, dtypes.canonicalize_user_dtype(dtype))
    return reduction(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
  return reduce


def _ufunc(func, nin: int, identity=None, **forms) -> ufunc:
  return ufunc(func, nin, 1, identity=identity, call=func, **forms)


add = _ufunc(ufuncs.add, 2, 0, reduce=reductions.sum, accumulate=reductions.cumsum,
             at=_update_at("add"))
multiply = _ufunc(ufuncs.multiply, 2, 1, reduce=reductions.prod,
                  accumulate=reductions.cumprod, at=_update_at("multiply"))
subtract = _ufunc(ufuncs.subtract, 2, at=_update_at("subtract"))
maximum = _ufunc(ufuncs.maximum, 2, reduce=_extremum(reductions.max))
minimum = _ufunc(ufuncs.minimum, 2, reduce=_extremum(reductions.min))
logical_and = _ufunc(ufuncs.logical_and, 2, True,
                     reduce=_bool_reduction(reductions.all, ufuncs.logical_and))
logical_or = _ufunc(ufuncs.logical_or, 2, False,
                    reduce=_bool_reduction(reductions.any, ufuncs.logical_or))
logical_xor = _ufunc(ufuncs.logical_xor, 2, False)
bitwise_and = _ufunc(ufuncs.bitwise_and, 2, -1)
bitwise_or = _ufunc(ufuncs.bitwise_or, 2, 0)
bitwise_xor = _ufunc(ufuncs.bitwise_xor, 2, 0)
logaddexp = _ufunc(ufuncs.logaddexp, 2, -np.inf)
logaddexp2 = _ufunc(_logaddexp2, 2, -np.inf)
negative = _ufunc(ufuncs.negative, 1)
