"""Array operations on typed key arrays: what makes sense on an array of keys acts on its
uint32 data with the trailing key dimensions kept whole.

An array of keys of shape S has data of shape (*S, *key_shape).  Structural operations
(indexing, `.at[]`, reshape, transpose, slices, dynamic slices and updates, concatenation,
stacking, broadcasting, `where`/`select`, repeat, take, delete/insert, triangles, the
`*_like` and `full` constructors, `astype` to the keys' own dtype) are the
same operations on the data, with the key dimensions appended to every shape and index
list; arithmetic and conversions raise JAX's errors.

The numpy layer and lax sit below `random` and know nothing of keys, so this module
installs itself on them (as the numpy layer installs array methods on `Array`): each
function listed in `_LAX_RULES` / `_JNP_RULES` is wrapped so that a call with a key array
among its operands goes to the rule here, and every other call goes straight through.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.numpy._util import PLAIN_OPERANDS as _PLAIN_OPERANDS
from minijax.random.prng import KeyTy, PRNGKeyArray

_K = PRNGKeyArray


def _nkey(k: PRNGKeyArray) -> int:
  return len(k._impl.key_shape)


def _wrap_like(k: PRNGKeyArray, data) -> PRNGKeyArray:
  return PRNGKeyArray(k._impl, data)


def _axis(axis: int, ndim: int) -> int:
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for a key array of rank {ndim}")
  return axis % ndim


def _broadcast_key(k: PRNGKeyArray, shape) -> PRNGKeyArray:
  shape = tuple(shape)
  if k.shape == shape:
    return k
  n, lead = _nkey(k), len(shape) - k.ndim
  dims = tuple(range(lead, len(shape) + n))
  return _wrap_like(k, lax.broadcast_in_dim(k._base_array, (*shape, *k._impl.key_shape),
                                            dims))


def _same_impl(keys, what: str):
  impls = {k._impl for k in keys if isinstance(k, _K)}
  if len(impls) > 1 or not all(isinstance(k, _K) for k in keys):
    shown = ", ".join(str(k.dtype) if isinstance(k, _K) else str(np.result_type(k))
                      for k in keys)
    raise TypeError(f"{what} requires arguments of one key dtype, got {shown}")
  return keys[0]


# ----------------------------------------------------------------------------- methods

def _normalize_index(k: PRNGKeyArray, idx):
  idx = idx if isinstance(idx, tuple) else (idx,)
  used = 0
  for e in idx:
    if e is None or e is Ellipsis:
      continue
    used += np.ndim(e) if getattr(e, "dtype", None) == np.bool_ else 1
  if used > k.ndim:
    raise IndexError(f"Too many indices for array: array is {k.ndim}-dimensional, but "
                     f"{used} were indexed")
  if any(e is Ellipsis for e in idx):
    idx = (*idx, *(slice(None),) * _nkey(k))
  return idx


def _getitem(self, idx):
  return _wrap_like(self, self._base_array[_normalize_index(self, idx)])


def _reshape(self, *shape, order="C"):
  if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
    shape = tuple(shape[0])
  shape = tuple(operator.index(s) for s in shape)
  if -1 in shape:
    known = math.prod(s for s in shape if s != -1)
    shape = tuple(self.size // known if s == -1 else s for s in shape)
  return _wrap_like(self, jnp.reshape(self._base_array, (*shape, *self._impl.key_shape),
                                      order=order))


def _transpose(self, *axes):
  if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
    axes = tuple(axes[0])
  axes = tuple(_axis(a, self.ndim) for a in axes) or tuple(reversed(range(self.ndim)))
  perm = (*axes, *range(self.ndim, self.ndim + _nkey(self)))
  return _wrap_like(self, lax.transpose(self._base_array, perm))


def _squeeze(self, axis=None):
  if axis is None:
    axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
  axis = (axis,) if isinstance(axis, int) else tuple(axis)
  return _wrap_like(self, lax.squeeze(self._base_array,
                                      tuple(_axis(a, self.ndim) for a in axis)))


def _swapaxes(self, a, b):
  perm = list(range(self.ndim))
  a, b = _axis(a, self.ndim), _axis(b, self.ndim)
  perm[a], perm[b] = perm[b], perm[a]
  return _transpose(self, perm)


def _eq(self, other):
  if not isinstance(other, _K):
    return NotImplemented
  shape = np.broadcast_shapes(self.shape, other.shape)
  a, b = _broadcast_key(self, shape), _broadcast_key(other, shape)
  eq = jnp.equal(a._base_array, b._base_array)
  return jnp.all(eq, axis=tuple(range(len(shape), len(shape) + _nkey(self))))


def _ne(self, other):
  eq = _eq(self, other)
  return eq if eq is NotImplemented else jnp.logical_not(eq)


def _names(*args) -> str:
  return ", ".join(str(a.dtype) if isinstance(a, _K) else str(jnp.result_type(a))
                   for a in args)


def _binary_error(name):
  def op(self, other):
    both = isinstance(other, _K)
    what = f"dtype {self.dtype}" if both and other.dtype == self.dtype else \
        f"dtypes {_names(self, other)}"
    raise TypeError(f"{name} does not accept {what}")

  def rop(self, other):
    raise TypeError(f"{name} does not accept dtypes {_names(other, self)}")
  return op, rop


def _unary_error(name):
  def op(self):
    raise TypeError(f"{name} does not accept dtype {self.dtype}")
  return op


class _KeyAt:
  """`keys.at[idx]`: `get()` and `set(keys)` on the key dimensions kept whole."""
  __slots__ = ("keys",)

  def __init__(self, keys):
    self.keys = keys

  def __getitem__(self, idx):
    return _KeyAtIndex(self.keys, idx)


class _KeyAtIndex:
  __slots__ = ("keys", "idx")

  def __init__(self, keys, idx):
    self.keys, self.idx = keys, idx

  def get(self, **kwargs):
    idx = _normalize_index(self.keys, self.idx)
    return _wrap_like(self.keys, self.keys._base_array.at[idx].get(**kwargs))

  def set(self, values, **kwargs):
    keys = self.keys
    if not isinstance(values, _K) or values._impl is not keys._impl:
      raise TypeError(f"key array .at[].set takes keys of dtype {keys.dtype}, got "
                      f"{getattr(values, 'dtype', type(values).__name__)}")
    idx = _normalize_index(keys, self.idx)
    return _wrap_like(keys, keys._base_array.at[idx].set(values._base_array, **kwargs))


def _install_methods():
  K = PRNGKeyArray
  K.__getitem__ = _getitem
  K.reshape = _reshape
  K.transpose = _transpose
  K.T = property(lambda self: _transpose(self))
  K.mT = property(lambda self: _swapaxes(self, -1, -2))
  K.ravel = K.flatten = lambda self, order="C": _reshape(self, -1, order=order)
  K.squeeze = _squeeze
  K.swapaxes = _swapaxes
  K.take = lambda self, indices, axis=None, **kw: _jnp_take(jnp.take, self, indices, axis, **kw)
  K.repeat = lambda self, repeats, axis=None, **kw: _jnp_repeat(jnp.repeat, self, repeats,
                                                                 axis, **kw)
  K.at = property(_KeyAt)
  K.__eq__, K.__ne__ = _eq, _ne
  K.__hash__ = None
  for name, dunders in [("add", ("__add__", "__radd__")), ("sub", ("__sub__", "__rsub__")),
                        ("mul", ("__mul__", "__rmul__")), ("div", ("__truediv__",
                                                                   "__rtruediv__")),
                        ("rem", ("__mod__", "__rmod__")), ("pow", ("__pow__", "__rpow__")),
                        ("floor_divide", ("__floordiv__", "__rfloordiv__")),
                        ("and", ("__and__", "__rand__")), ("or", ("__or__", "__ror__")),
                        ("xor", ("__xor__", "__rxor__")), ("lt", ("__lt__", "__gt__")),
                        ("le", ("__le__", "__ge__")), ("dot_general", ("__matmul__",
                                                                       "__rmatmul__"))]:
    op, rop = _binary_error(name)
    setattr(K, dunders[0], op)
    setattr(K, dunders[1], rop)
  K.__neg__ = _unary_error("neg")
  K.__pos__ = _unary_error("pos")
  K.__abs__ = _unary_error("abs")
  K.__invert__ = _unary_error("not")


# ----------------------------------------------------------------------------- lax rules

def _tail(k: PRNGKeyArray, value) -> tuple:
  """Zeros for the key dimensions of a per-dimension list (starts, indices)."""
  return (*value, *(0,) * _nkey(k))


def _lax_slice(f, x, start_indices, limit_indices, strides=None):
  strides = None if strides is None else (*strides, *(1,) * _nkey(x))
  return _wrap_like(x, f(x._base_array, _tail(x, start_indices),
                         (*limit_indices, *x._impl.key_shape), strides))


def _lax_dynamic_slice(f, x, start_indices, slice_sizes):
  return _wrap_like(x, f(x._base_array, _tail(x, start_indices),
                         (*slice_sizes, *x._impl.key_shape)))


def _lax_dynamic_update_slice(f, x, update, start_indices):
  _same_impl([x, update], "dynamic_update_slice")
  return _wrap_like(x, f(x._base_array, update._base_array, _tail(x, start_indices)))


def _lax_transpose(f, x, permutation):
  return _transpose(x, tuple(permutation))


def _lax_reshape(f, x, new_sizes, dimensions=None):
  if dimensions is not None:
    x = _transpose(x, tuple(dimensions))
  return _reshape(x, tuple(new_sizes))


def _lax_broadcast_in_dim(f, x, shape, broadcast_dimensions, **kwargs):
  n = len(shape)
  dims = (*broadcast_dimensions, *range(n, n + _nkey(x)))
  return _wrap_like(x, f(x._base_array, (*shape, *x._impl.key_shape), dims))


def _lax_broadcast(f, x, sizes):
  return _wrap_like(x, f(x._base_array, sizes))


def _lax_squeeze(f, x, dimensions):
  return _squeeze(x, tuple(dimensions))


def _lax_expand_dims(f, x, dimensions):
  return _wrap_like(x, f(x._base_array, tuple(_axis(d, x.ndim + len(dimensions))
                                              for d in dimensions)))


def _lax_concatenate(f, operands, dimension):
  first = _same_impl(list(operands), "concatenate")
  return _wrap_like(first, f([k._base_array for k in operands], dimension))


def _lax_select_n(f, which, *cases):
  first = _same_impl(list(cases), "select_n")
  which = jnp.asarray(which)
  if which.ndim:
    which = lax.broadcast_in_dim(which, (*which.shape, *first._impl.key_shape),
                                 tuple(range(which.ndim)))
  return _wrap_like(first, f(which, *(k._base_array for k in cases)))


def _lax_select(f, pred, on_true, on_false):
  return _lax_select_n(lax.select_n, pred, on_false, on_true)


def _lax_convert_element_type(f, x, new_dtype, *args, **kwargs):
  if isinstance(x, _K):
    to = new_dtype if isinstance(new_dtype, KeyTy) else dtypes.canonicalize_dtype(new_dtype)
    raise ValueError(f"Cannot convert_element_type from {x.dtype} to {to}")
  raise ValueError(f"Cannot convert_element_type from {jnp.result_type(x)} to {new_dtype}")


def _in_dim(name):
  def rule(f, x, *args, **kwargs):
    return _wrap_like(x, f(x._base_array, *args, **kwargs))
  rule.__name__ = name
  return rule


def _lax_dynamic_update_in_dim(f, x, update, *args, **kwargs):
  _same_impl([x, update], "dynamic_update_slice")
  return _wrap_like(x, f(x._base_array, update._base_array, *args, **kwargs))


_LAX_RULES = {
    "slice": _lax_slice, "dynamic_slice": _lax_dynamic_slice,
    "dynamic_update_slice": _lax_dynamic_update_slice, "transpose": _lax_transpose,
    "reshape": _lax_reshape, "broadcast_in_dim": _lax_broadcast_in_dim,
    "broadcast": _lax_broadcast, "squeeze": _lax_squeeze, "expand_dims": _lax_expand_dims,
    "concatenate": _lax_concatenate, "select_n": _lax_select_n, "select": _lax_select,
    "convert_element_type": _lax_convert_element_type,
    # the *_in_dim helpers name one axis, which counts the same on the data
    "slice_in_dim": _in_dim("slice_in_dim"), "index_in_dim": _in_dim("index_in_dim"),
    "dynamic_slice_in_dim": _in_dim("dynamic_slice_in_dim"),
    "dynamic_index_in_dim": _in_dim("dynamic_index_in_dim"),
    "dynamic_update_slice_in_dim": _lax_dynamic_update_in_dim,
    "dynamic_update_index_in_dim": _lax_dynamic_update_in_dim,
}


# ----------------------------------------------------------------------------- jnp rules

def _jnp_reshape(f, a, shape=None, order="C", **kwargs):
  shape = kwargs.pop("newshape", shape)
  return _reshape(a, shape if isinstance(shape, (tuple, list)) else (shape,), order=order)


def _jnp_ravel(f, a, order="C"):
  return _reshape(a, -1, order=order)


def _jnp_transpose(f, a, axes=None):
  return _transpose(a, *(() if axes is None else (tuple(axes),)))


def _jnp_concatenate(f, arrays, axis=0, **kwargs):
  arrays = list(arrays)
  first = _same_impl(arrays, "concatenate")
  if axis is None:
    arrays, axis = [_reshape(k, -1) for k in arrays], 0
  return _wrap_like(first, lax.concatenate([k._base_array for k in arrays],
                                           _axis(axis, first.ndim)))


def _jnp_stack(f, arrays, axis=0, **kwargs):
  arrays = list(arrays)
  first = _same_impl(arrays, "stack")
  axis = _axis(axis, first.ndim + 1)
  return _wrap_like(first, f([k._base_array for k in arrays], axis=axis))


def _jnp_broadcast_to(f, a, shape):
  shape = (shape,) if isinstance(shape, int) else tuple(shape)
  return _broadcast_key(a, shape)


def _jnp_broadcast_arrays(f, *args):
  shape = np.broadcast_shapes(*(np.shape(a) if not isinstance(a, _K) else a.shape
                                for a in args))
  return [(_broadcast_key(a, shape) if isinstance(a, _K) else jnp.broadcast_to(a, shape))
          for a in args]


def _jnp_expand_dims(f, a, axis):
  axes = (axis,) if isinstance(axis, int) else tuple(axis)
  n = a.ndim + len(axes)
  return _wrap_like(a, f(a._base_array, tuple(_axis(x, n) for x in axes)))


def _jnp_tile(f, a, reps):
  reps = (reps,) if isinstance(reps, int) else tuple(reps)
  if len(reps) > a.ndim:
    a = _reshape(a, (1,) * (len(reps) - a.ndim) + a.shape)
  reps = (1,) * (a.ndim - len(reps)) + reps
  return _wrap_like(a, f(a._base_array, (*reps, *(1,) * _nkey(a))))


def _jnp_append(f, arr, values, axis=None):
  if axis is None:
    return _jnp_concatenate(None, [_reshape(arr, -1), _reshape(values, -1)], 0)
  return _jnp_concatenate(None, [arr, values], axis)


def _jnp_array(f, obj, dtype=None, *args, **kwargs):
  if not isinstance(obj, _K):
    raise TypeError(f"cannot make an array of dtype {dtype} from {type(obj).__name__}")
  if dtype is not None and dtype != obj.dtype:
    raise TypeError(f"cannot convert a key array of dtype {obj.dtype} to {dtype}")
  return obj


def _jnp_where(f, condition, x=None, y=None, **kwargs):
  if x is None or y is None:
    raise TypeError("jnp.where with one argument does not take key arrays")
  _same_impl([x, y], "where")
  shape = np.broadcast_shapes(np.shape(condition), x.shape, y.shape)
  x, y = _broadcast_key(x, shape), _broadcast_key(y, shape)
  cond = jnp.broadcast_to(jnp.asarray(condition, dtype=bool), shape)
  return _lax_select_n(lax.select_n, cond, y, x)


def _jnp_like(name):
  def rule(f, a, *args, dtype=None, shape=None, **kwargs):
    fill = args[0] if args else kwargs.pop("fill_value", None)
    if name == "full_like" and isinstance(fill, _K):
      target = a.shape if shape is None else tuple(shape)
      return _broadcast_key(fill, target)
    if not isinstance(a, _K):
      raise TypeError(f"{name} got a key array where it takes an array")
    if dtype is not None and dtype != a.dtype:
      raise TypeError(f"{name} of a key array takes its own dtype, got {dtype}")
    data_shape = None if shape is None else (*shape, *a._impl.key_shape)
    fill_args = (fill,) if name == "full_like" else ()
    return _wrap_like(a, f(a._base_array, *fill_args, shape=data_shape))
  return rule


def _jnp_full_of(name):
  def rule(f, shape, *args, dtype=None, **kwargs):
    if name == "full":
      fill = args[0] if args else kwargs.pop("fill_value")
      dtype = args[1] if len(args) > 1 else dtype
    else:
      fill, dtype = None, (args[0] if args else dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if isinstance(fill, _K):
      return _broadcast_key(fill, shape)
    if not isinstance(dtype, KeyTy):
      raise TypeError(f"{name}: a key array is no shape")
    impl = dtype._impl
    data_shape = (*shape, *impl.key_shape)
    fill_args = (fill,) if name == "full" else ()
    return PRNGKeyArray(impl, f(data_shape, *fill_args, dtype=np.uint32))
  return rule


def _jnp_shape(f, a):
  return a.shape


def _jnp_ndim(f, a):
  return a.ndim


def _jnp_size(f, a, axis=None):
  return a.size if axis is None else a.shape[axis]


def _jnp_result_type(f, *args):
  keys = [a.dtype for a in args if isinstance(a, (_K, KeyTy))]
  keys += [a for a in args if isinstance(a, KeyTy)]
  if any(not isinstance(a, (_K, KeyTy)) for a in args) or len(set(keys)) != 1:
    raise TypeError(f"result_type does not combine key dtypes with others: {args}")
  return keys[0]


def _jnp_take(f, a, indices, axis=None, **kwargs):
  if axis is None:
    a, axis = _reshape(a, -1), 0
  axis = _axis(axis, a.ndim)
  return _wrap_like(a, f(a._base_array, indices, axis=axis))


def _jnp_equal(f, x, y):
  return _eq(x, y) if isinstance(x, _K) else _eq(y, x)


def _jnp_array_equal(f, a1, a2, equal_nan=False):
  if not (isinstance(a1, _K) and isinstance(a2, _K)):
    raise TypeError(f"array_equal compares key arrays with key arrays, got {_names(a1, a2)}")
  if a1.shape != a2.shape:
    return jnp.asarray(False)
  return jnp.all(_eq(a1, a2))  # (keys hold no NaN: equal_nan changes nothing)


def _jnp_isclose(f, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """Keys are close when equal (JAX's answer); with anything but keys of their type, the
  binary TypeError."""
  if not (isinstance(a, _K) and isinstance(b, _K) and a.dtype == b.dtype):
    _jnp_binary_error("isclose")(f, a, b)
  return _eq(a, b)


def _jnp_allclose(f, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  return jnp.all(_jnp_isclose(f, a, b))


def _jnp_not_equal(f, x, y):
  return _ne(x, y) if isinstance(x, _K) else _ne(y, x)


def _jnp_binary_error(name):
  def rule(f, x, y, *args, **kwargs):
    both_keys = isinstance(x, _K) and isinstance(y, _K) and x.dtype == y.dtype
    what = f"dtype {x.dtype}" if both_keys else f"dtypes {_names(x, y)}"
    raise TypeError(f"{name} does not accept {what}")
  return rule


def _jnp_unary_error(name):
  def rule(f, x, *args, **kwargs):
    raise TypeError(f"{name} does not accept dtype {x.dtype}")
  return rule


def _axes(a: PRNGKeyArray, axis) -> tuple:
  """`axis` (None for all, an int or a sequence) as non-negative axes of the keys."""
  if axis is None:
    return tuple(range(a.ndim))
  axes = (axis,) if isinstance(axis, int) else tuple(axis)
  return tuple(_axis(x, a.ndim) for x in axes)


def _jnp_split(f, ary, indices_or_sections, axis=0):
  return [_wrap_like(ary, d) for d in f(ary._base_array, indices_or_sections,
                                        axis=_axis(axis, ary.ndim))]


def _jnp_flip(f, m, axis=None):
  return _wrap_like(m, f(m._base_array, _axes(m, axis)))


def _jnp_roll(f, a, shift, axis=None):
  if axis is None:
    return _reshape(_jnp_roll(f, _reshape(a, -1), shift, 0), a.shape)
  return _wrap_like(a, f(a._base_array, shift, _axes(a, axis)))


def _jnp_moveaxis(f, a, source, destination):
  src = _axes(a, source)
  dst = tuple(_axis(x, a.ndim) for x in ((destination,) if isinstance(destination, int)
                                         else destination))
  return _wrap_like(a, f(a._base_array, src, dst))


def _atleast(n: int):
  """atleast_{n}d of key arrays: numpy's shape rule, read off numpy's own function."""
  numpy_rule = getattr(np, f"atleast_{n}d")

  def rule(f, *arys):
    outs = [a if not isinstance(a, _K) else _reshape(a, numpy_rule(np.empty(a.shape)).shape)
            for a in arys]
    outs = [f(a) if not isinstance(a, _K) else a for a in outs]
    return outs[0] if len(outs) == 1 else outs
  return rule


def _stacking(n: int, axis: int):
  """hstack (along 0 for 1-d keys, else 1), vstack, dstack: concatenation after
  atleast_{n}d."""
  def rule(f, tup, **kwargs):
    arrays = [_atleast(n)(None, a) for a in tup]
    return _jnp_concatenate(None, arrays, 0 if arrays[0].ndim == 1 else axis)
  return rule


def _jnp_column_stack(f, tup):
  arrays = [_reshape(a, (a.size, 1)) if a.ndim < 2 else a for a in tup]
  return _jnp_concatenate(None, arrays, 1)


def _jnp_repeat(f, a, repeats, axis=None, **kwargs):
  if axis is None:
    a, axis = _reshape(a, -1), 0
  return _wrap_like(a, f(a._base_array, repeats, axis=_axis(axis, a.ndim), **kwargs))


def _jnp_take_along_axis(f, arr, indices, axis, **kwargs):
  if axis is None:
    arr, axis = _reshape(arr, -1), 0
  indices = jnp.asarray(indices)
  trailing = jnp.reshape(indices, (*indices.shape, *(1,) * _nkey(arr)))
  return _wrap_like(arr, f(arr._base_array, trailing, axis=_axis(axis, arr.ndim), **kwargs))


def _jnp_rot90(f, m, k=1, axes=(0, 1)):
  return _wrap_like(m, f(m._base_array, k, axes=_axes(m, axes)))


def _jnp_flip_one(axis: int):
  return lambda f, m: _jnp_flip(jnp.flip, m, axis)


def _jnp_triangle(lower: bool):
  """triu/tril: the keys off the kept triangle become keys of zero data, as in JAX."""
  def rule(f, m, k=0):
    keep = (np.tril if lower else np.triu)(np.ones(m.shape[-2:], bool), k)
    zeros = _wrap_like(m, jnp.zeros_like(m._base_array))
    return _jnp_where(None, np.broadcast_to(keep, m.shape), m, zeros)
  return rule


def _jnp_delete(f, arr, obj, axis=None, **kwargs):
  if axis is None:
    arr, axis = _reshape(arr, -1), 0
  return _wrap_like(arr, f(arr._base_array, obj, axis=_axis(axis, arr.ndim), **kwargs))


def _jnp_insert(f, arr, obj, values, axis=None):
  if axis is None:
    arr, axis = _reshape(arr, -1), 0
  _same_impl([arr, values], "insert")
  return _wrap_like(arr, f(arr._base_array, obj, values._base_array, axis=_axis(axis, arr.ndim)))


def _jnp_select(f, condlist, choicelist, default=0):
  if not isinstance(default, _K):
    raise TypeError("jnp.select of key arrays takes a key array as its default")
  out = default
  for cond, choice in reversed(list(zip(condlist, choicelist))):
    out = _jnp_where(None, cond, choice, out)
  return out


def _jnp_resize(f, a, new_shape):
  shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
  flat = _reshape(a, -1)
  index = np.arange(math.prod(shape)) % max(flat.size, 1)
  return _reshape(_jnp_take(jnp.take, flat, index.astype(np.int32), axis=0), shape)


def _jnp_astype(f, x, dtype, *args, **kwargs):
  if isinstance(x, _K) and dtype == x.dtype:
    return x
  return _lax_convert_element_type(None, x, dtype)


_JNP_RULES = {
    "split": _jnp_split, "array_split": _jnp_split, "flip": _jnp_flip, "roll": _jnp_roll,
    "moveaxis": _jnp_moveaxis,
    "atleast_1d": _atleast(1), "atleast_2d": _atleast(2), "atleast_3d": _atleast(3),
    "hstack": _stacking(1, 1), "vstack": _stacking(2, 0), "dstack": _stacking(3, 2),
    "column_stack": _jnp_column_stack, "repeat": _jnp_repeat,
    "take_along_axis": _jnp_take_along_axis, "rot90": _jnp_rot90,
    "fliplr": _jnp_flip_one(1), "flipud": _jnp_flip_one(0), "triu": _jnp_triangle(False),
    "tril": _jnp_triangle(True), "delete": _jnp_delete, "insert": _jnp_insert,
    "select": _jnp_select, "resize": _jnp_resize, "astype": _jnp_astype,
    "isscalar": lambda f, a: a.ndim == 0,
    "reshape": _jnp_reshape, "ravel": _jnp_ravel, "transpose": _jnp_transpose,
    "concatenate": _jnp_concatenate, "stack": _jnp_stack, "broadcast_to": _jnp_broadcast_to,
    "broadcast_arrays": _jnp_broadcast_arrays, "expand_dims": _jnp_expand_dims,
    "tile": _jnp_tile, "append": _jnp_append, "array": _jnp_array, "asarray": _jnp_array,
    "where": _jnp_where, "zeros_like": _jnp_like("zeros_like"),
    "ones_like": _jnp_like("ones_like"), "empty_like": _jnp_like("empty_like"),
    "full_like": _jnp_like("full_like"), "zeros": _jnp_full_of("zeros"),
    "ones": _jnp_full_of("ones"), "empty": _jnp_full_of("empty"),
    "full": _jnp_full_of("full"), "shape": _jnp_shape, "ndim": _jnp_ndim,
    "size": _jnp_size, "result_type": _jnp_result_type, "take": _jnp_take,
    "equal": _jnp_equal, "not_equal": _jnp_not_equal, "array_equal": _jnp_array_equal,
    "isclose": _jnp_isclose, "allclose": _jnp_allclose,
    "nan_to_num": lambda f, x, *args, **kwargs: x,  # (keys hold no NaN: as they are, as JAX)
    "squeeze": lambda f, a, axis=None: _squeeze(a, axis),
    "swapaxes": lambda f, a, b, c: _swapaxes(a, b, c),
    "add": _jnp_binary_error("add"), "subtract": _jnp_binary_error("sub"),
    "multiply": _jnp_binary_error("mul"), "negative": _jnp_unary_error("neg"),
}


def _has_key(args, kwargs) -> bool:
  for a in args:
    if type(a) in _PLAIN_OPERANDS:  # the common case, told by the type alone
      continue
    if isinstance(a, (_K, KeyTy)):
      return True
    if type(a) in (list, tuple) and any(isinstance(e, _K) for e in a):
      return True
  return bool(kwargs) and any(isinstance(v, (_K, KeyTy)) for v in kwargs.values())


def _install(module, name, rule) -> None:
  original = getattr(module, name)
  if getattr(original, "_key_rule", None) is not None:
    return

  def wrap(call):
    @functools.wraps(call)
    def wrapped(*args, **kwargs):
      if _has_key(args, kwargs):
        return rule(original, *args, **kwargs)
      return call(*args, **kwargs)
    return wrapped
  # (a ufunc, jnp.add, keeps its methods)
  new = original.wrapping_call(wrap) if isinstance(original, jnp.ufunc) else wrap(original)
  new._key_rule = rule
  setattr(module, name, new)


def install() -> None:
  _install_methods()
  for name, rule in _LAX_RULES.items():
    _install(lax, name, rule)
  for name, rule in _JNP_RULES.items():
    _install(jnp, name, rule)


install()
