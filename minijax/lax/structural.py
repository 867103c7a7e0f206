"""Shape-changing primitives: broadcast_in_dim, reshape, transpose, squeeze, rev,
concatenate, pad; `device_put_p`, which makes a host value an Array; and `full`, `broadcast`,
`expand_dims`, `convert_to_array`.

All of these are linear, so each block has a jvp that applies the primitive to the tangent
and a transpose that maps a cotangent back to the operand's shape.  Batching rules move the
batch dimension to the front and shift the static dimension parameters by one.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes, pretty
from minijax.core.avals import ShapedArray, canonicalize_shape, get_aval
from minijax.core.primitive import Primitive
from minijax.core import trace as trace_lib
from minijax.core.trace import is_eval_context
from minijax.interpreters import ad, batching
from minijax.interpreters.partial_eval import DynamicJaxprTrace, JaxprTrace
from minijax.lax import utils
from minijax.lowering import mlir

__all__ = ["broadcast_in_dim", "broadcast_shapes", "broadcast", "broadcast_to_rank", "reshape", "transpose",
           "squeeze", "expand_dims", "rev", "concatenate", "pad", "full", "wide_constant", "convert_to_array",
           "device_put_p", "broadcast_in_dim_p", "reshape_p", "transpose_p", "squeeze_p", "rev_p",
           "concatenate_p", "pad_p"]


def _ct_rule(fn):
  """Transpose rule of a unary linear primitive: `fn(ct, operand_aval, **params)`."""
  def rule(ct, x, *rest, **params):
    if type(ct) is ad.Zero:
      return [ad.Zero(x.aval)] + [None] * len(rest)
    return [fn(ct, x.aval, **params)] + [None] * len(rest)
  return rule


def _unary_linear_jvp(prim):
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if type(tangents[0]) is ad.Zero:
      return out, ad.Zero.from_primal_value(out)
    return out, prim.bind(tangents[0], *primals[1:], **params)
  ad.primitive_jvps[prim] = jvp


# ---- broadcast_in_dim
broadcast_in_dim_p = Primitive("broadcast_in_dim")


def check_sizes(name: str, shape) -> None:
  """JAX's TypeError for a negative size (`name`: the primitive whose shape it is)."""
  if any(d < 0 for d in shape):
    raise TypeError(f"{name} shape must have every element be nonnegative, got {shape}.")


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
  """JAX's checks and words.  The operand's axes may land in any order (a transpose too)."""
  check_sizes("broadcast_in_dim", shape)
  if len(broadcast_dimensions) != x.ndim:
    raise TypeError("broadcast_in_dim broadcast_dimensions must have length equal to operand "
                    f"ndim; got broadcast_dimensions {broadcast_dimensions} for operand ndim "
                    f"{x.ndim}.")
  if any(not 0 <= d < len(shape) for d in broadcast_dimensions):
    raise TypeError("broadcast_in_dim broadcast_dimensions must be a subset of output "
                    f"dimensions, got {broadcast_dimensions} for operand ndim {x.ndim} and "
                    f"shape {shape}.")
  if any(x.shape[i] not in (1, shape[d]) for i, d in enumerate(broadcast_dimensions)):
    raise TypeError("broadcast_in_dim operand dimension sizes must either be 1, or be equal "
                    "to their corresponding dimensions in the target broadcast shape; got "
                    f"operand of shape {x.shape}, target broadcast shape {shape}, "
                    f"broadcast_dimensions {broadcast_dimensions} ")
  if len(set(broadcast_dimensions)) != len(broadcast_dimensions):
    raise TypeError("broadcast_in_dim broadcast_dimensions must not contain duplicates, got "
                    f"broadcast_dimensions {broadcast_dimensions}")
  return ShapedArray(shape, x.dtype, x.weak_type)


broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract_eval)
# as JAX prints it: the shape is the binder's, and no broadcast dimensions are not shown
pretty.pp_rules[broadcast_in_dim_p] = lambda params, names, indent: (
    [f"broadcast_dimensions={params['broadcast_dimensions']}"]
    if params["broadcast_dimensions"] else [])


def _broadcast_in_dim_lowering(ctx, x, *, shape, broadcast_dimensions):
  return mhlo.BroadcastInDimOp(mlir.aval_to_ir_type(ctx.avals_out[0]), x,
                               list(broadcast_dimensions)).result


mlir.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lowering)
_unary_linear_jvp(broadcast_in_dim_p)


def _broadcast_in_dim_transpose(ct, aval, *, shape, broadcast_dimensions):
  from minijax.lax.reductions import reduce_sum
  summed = [d for d in range(len(shape)) if d not in broadcast_dimensions]
  summed += [d for i, d in enumerate(broadcast_dimensions) if aval.shape[i] != shape[d]]
  out = reduce_sum(ct, tuple(sorted(summed))) if summed else ct
  # the kept axes are in the output's order; put them in the operand's
  kept = [d for d in broadcast_dimensions if d not in summed]
  order = sorted(kept)
  permutation = tuple(order.index(d) for d in kept)
  if permutation != tuple(range(len(kept))):
    out = transpose(out, permutation)
  return reshape(out, aval.shape)


ad.primitive_transposes[broadcast_in_dim_p] = _ct_rule(_broadcast_in_dim_transpose)


def _broadcast_in_dim_batch(args, dims, *, shape, broadcast_dimensions):
  (x,), (d,) = args, dims
  x = batching.moveaxis(x, d, 0)
  return broadcast_in_dim(x, (x.shape[0],) + tuple(shape),
                          (0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch


def broadcast_in_dim(operand, shape, broadcast_dimensions):
  operand = convert_to_array(operand)
  shape, broadcast_dimensions = canonicalize_shape(shape), tuple(broadcast_dimensions)
  if get_aval(operand).shape == shape and broadcast_dimensions == tuple(range(len(shape))):
    return operand
  return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=broadcast_dimensions)


def broadcast(operand, sizes):
  operand = convert_to_array(operand)
  shape = canonicalize_shape(sizes) + get_aval(operand).shape
  return broadcast_in_dim(operand, shape, tuple(range(len(sizes), len(shape))))


def broadcast_to_rank(x, rank: int):
  x = convert_to_array(x)
  ndim = get_aval(x).ndim
  return broadcast(x, (1,) * (rank - ndim)) if ndim < rank else x


# ---- reshape
reshape_p = Primitive("reshape")


def _reshape_abstract_eval(x, *, new_sizes):
  if any(s < 0 for s in new_sizes):
    raise TypeError(f"reshape new_sizes must all be positive, got {new_sizes}.")
  if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
    raise TypeError(f"reshape cannot reshape {x.str_short()} ({x.size} elements) to shape "
                    f"{new_sizes}")
  return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p.def_abstract_eval(_reshape_abstract_eval)
mlir.register_lowering(reshape_p, lambda ctx, x, *, new_sizes: mhlo.ReshapeOp(
    mlir.aval_to_ir_type(ctx.avals_out[0]), x).result)
_unary_linear_jvp(reshape_p)
ad.primitive_transposes[reshape_p] = _ct_rule(
    lambda ct, aval, *, new_sizes: reshape(ct, aval.shape))


def _reshape_batch(args, dims, *, new_sizes):
  (x,), (d,) = args, dims
  x = batching.moveaxis(x, d, 0)
  return reshape(x, (x.shape[0],) + tuple(new_sizes)), 0


batching.primitive_batchers[reshape_p] = _reshape_batch


def reshape(operand, new_sizes, dimensions=None):
  """Row-major reshape; `dimensions`, if given, transposes the operand first."""
  operand = convert_to_array(operand)
  shape = get_aval(operand).shape
  if dimensions is not None and sorted(dimensions) != list(range(len(shape))):
    raise TypeError(f"reshape dimensions must be a permutation of operand dimensions, got "
                    f"dimensions {tuple(dimensions)} for shape {shape}.")
  if dimensions is not None and tuple(dimensions) != tuple(range(len(shape))):
    operand = transpose(operand, dimensions)
  new_sizes = canonicalize_shape(new_sizes)
  if get_aval(operand).shape == new_sizes:
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes)


# ---- transpose
transpose_p = Primitive("transpose")


def _transpose_abstract_eval(x, *, permutation):
  if sorted(permutation) != list(range(x.ndim)):
    raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {permutation} for operand shape {x.shape}.")
  return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p.def_abstract_eval(_transpose_abstract_eval)
mlir.register_lowering(transpose_p, lambda ctx, x, *, permutation: mhlo.TransposeOp(
    x, list(permutation)).result)
_unary_linear_jvp(transpose_p)
ad.primitive_transposes[transpose_p] = _ct_rule(
    lambda ct, aval, *, permutation: transpose(ct, tuple(np.argsort(permutation))))


def _transpose_batch(args, dims, *, permutation):
  (x,), (d,) = args, dims
  x = batching.moveaxis(x, d, 0)
  return transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


batching.primitive_batchers[transpose_p] = _transpose_batch


def transpose(operand, permutation):
  operand = convert_to_array(operand)
  permutation = tuple(int(p) for p in permutation)
  if permutation == tuple(range(len(permutation))) and len(permutation) == get_aval(operand).ndim:
    return operand
  return transpose_p.bind(operand, permutation=permutation)


# ---- squeeze
squeeze_p = Primitive("squeeze")


def _squeeze_abstract_eval(x, *, dimensions):
  for d in dimensions:
    if not 0 <= d < x.ndim:
      raise ValueError(f"axis {d} is out of bounds for array of dimension {x.ndim}")
  if any(x.shape[d] != 1 for d in dimensions):
    raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                     f"one, got shape={x.shape} and dimensions={dimensions}")
  return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions),
                     x.dtype, x.weak_type)


squeeze_p.def_abstract_eval(_squeeze_abstract_eval)
mlir.register_lowering(squeeze_p, lambda ctx, x, *, dimensions: mhlo.ReshapeOp(
    mlir.aval_to_ir_type(ctx.avals_out[0]), x).result)
_unary_linear_jvp(squeeze_p)
ad.primitive_transposes[squeeze_p] = _ct_rule(
    lambda ct, aval, *, dimensions: reshape(ct, aval.shape))


def _squeeze_batch(args, dims, *, dimensions):
  (x,), (d,) = args, dims
  x = batching.moveaxis(x, d, 0)
  return squeeze(x, tuple(i + 1 for i in dimensions)), 0


batching.primitive_batchers[squeeze_p] = _squeeze_batch


def squeeze(array, dimensions):
  array = convert_to_array(array)
  ndim = get_aval(array).ndim
  dims = tuple(sorted({d % ndim if -ndim <= d < ndim else d for d in dimensions}))
  if not dims:
    return array
  return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array, dimensions):
  """Inserts axes of size 1 at `dimensions` (positions in the result): a broadcast_in_dim,
  as JAX's."""
  array = convert_to_array(array)
  ndim = get_aval(array).ndim + len(dimensions)
  dims = [d % ndim if -ndim <= d < ndim else d for d in dimensions]
  for d in dims:
    if not 0 <= d < ndim:
      raise ValueError(f"axis {d} is out of bounds for array of dimension {ndim}")
  if len(set(dims)) != len(dims):
    raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dims)}")
  shape = list(get_aval(array).shape)
  for d in sorted(dims):
    shape.insert(d, 1)
  kept = tuple(i for i in range(ndim) if i not in dims)
  return broadcast_in_dim(array, tuple(shape), kept)


# ---- rev
rev_p = Primitive("rev")


def _rev_abstract_eval(x, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
  if any(not 0 <= d < x.ndim for d in dimensions):
    raise TypeError(f"rev dimensions must all be less than operand ndim, got dimensions "
                    f"{dimensions} for operand ndim {x.ndim}.")
  return x


rev_p.def_abstract_eval(_rev_abstract_eval)
mlir.register_lowering(rev_p, lambda ctx, x, *, dimensions: mhlo.ReverseOp(
    x, list(dimensions)).result)
_unary_linear_jvp(rev_p)
ad.primitive_transposes[rev_p] = _ct_rule(lambda ct, aval, *, dimensions: rev(ct, dimensions))


def _rev_batch(args, dims, *, dimensions):
  (x,), (d,) = args, dims
  return rev(x, tuple(i + (i >= d) for i in dimensions)), d


batching.primitive_batchers[rev_p] = _rev_batch


def rev(operand, dimensions):
  operand = convert_to_array(operand)
  dims = tuple(int(d) for d in dimensions)
  return rev_p.bind(operand, dimensions=dims) if dims else operand


# ---- concatenate
concatenate_p = Primitive("concatenate")


def _concatenate_abstract_eval(*xs, dimension):
  if not xs:
    raise ValueError("concatenate requires a non-empty sequences of arrays")
  x0 = xs[0]
  shapes = ", ".join(str(x.shape) for x in xs)
  if any(x.ndim != x0.ndim for x in xs):
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{shapes}.")
  if not 0 <= dimension < x0.ndim:
    raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for shapes "
                    f"{shapes}.")
  if any(x.shape[:dimension] + x.shape[dimension + 1:]
         != x0.shape[:dimension] + x0.shape[dimension + 1:] for x in xs):
    raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions other "
                    f"than the one being concatenated: concatenating along dimension "
                    f"{dimension} for shapes {shapes}.")
  utils.check_same_dtypes("concatenate", *xs)
  shape = list(x0.shape)
  shape[dimension] = sum(x.shape[dimension] for x in xs)
  return ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))


concatenate_p.def_abstract_eval(_concatenate_abstract_eval)
mlir.register_lowering(concatenate_p, lambda ctx, *xs, dimension: mhlo.ConcatenateOp(
    list(xs), dimension).result)


def _concatenate_jvp(primals, tangents, *, dimension):
  out = concatenate(primals, dimension)
  if all(type(t) is ad.Zero for t in tangents):
    return out, ad.Zero.from_primal_value(out)
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  return out, concatenate_p.bind(*tangents, dimension=dimension)


def _concatenate_transpose(ct, *xs, dimension):
  from minijax.lax.slicing import slice_in_dim
  outs, start = [], 0
  for x in xs:
    size = x.aval.shape[dimension] if ad.is_undefined_primal(x) else np.shape(x)[dimension]
    if not ad.is_undefined_primal(x):
      outs.append(None)
    elif type(ct) is ad.Zero:
      outs.append(ad.Zero(x.aval))
    else:
      outs.append(slice_in_dim(ct, start, start + size, axis=dimension))
    start += size
  return outs


def _concatenate_batch(args, dims, *, dimension):
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  xs = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  return concatenate_p.bind(*xs, dimension=dimension + 1), 0


ad.primitive_jvps[concatenate_p] = _concatenate_jvp
ad.primitive_transposes[concatenate_p] = _concatenate_transpose
batching.primitive_batchers[concatenate_p] = _concatenate_batch


def concatenate(operands: Sequence, dimension: int):
  operands = [convert_to_array(x) for x in operands]
  if len(operands) == 1:
    return operands[0]
  return concatenate_p.bind(*operands, dimension=int(dimension))


# ---- pad: (low, high, interior) per axis; negative low/high crop
pad_p = Primitive("pad")


def _pad_abstract_eval(x, padding_value, *, padding_config):
  if padding_value.shape != () or padding_value.dtype != x.dtype:
    raise TypeError(f"pad requires a scalar padding value of the operand's dtype, got "
                    f"operand {x.str_short()} and padding value {padding_value.str_short()}")
  if len(padding_config) != x.ndim:  # (JAX's words)
    raise ValueError("length of padding_config must equal the number of axes of operand, got "
                     f"padding_config {padding_config} for operand shape {x.shape}")
  if any(i < 0 for _, _, i in padding_config):
    raise ValueError("interior padding in padding_config must be nonnegative, got "
                     f"padding_config {padding_config}")
  shape = [lo + hi + n + max(n - 1, 0) * interior
           for n, (lo, hi, interior) in zip(x.shape, padding_config)]
  if any(size < 0 for size in shape):
    raise ValueError("Dimension size after padding is not at least 0, got result shape "
                     f"{tuple(shape)}, for padding_config {padding_config} and operand shape "
                     f"{x.shape}")
  return ShapedArray(shape, x.dtype, x.weak_type)


pad_p.def_abstract_eval(_pad_abstract_eval)


def _pad_lowering(ctx, x, padding_value, *, padding_config):
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  return mhlo.PadOp(x, padding_value, list(lo), list(hi),
                    list(interior)).result


mlir.register_lowering(pad_p, _pad_lowering)


def _pad_jvp(primals, tangents, *, padding_config):
  out = pad_p.bind(*primals, padding_config=padding_config)
  if all(type(t) is ad.Zero for t in tangents):
    return out, ad.Zero.from_primal_value(out)
  tx, tv = [ad.instantiate_zeros(t) for t in tangents]
  return out, pad_p.bind(tx, tv, padding_config=padding_config)


def _unpad(ct, aval, padding_config):
  """The operand-shaped part of a padded cotangent."""
  from minijax.lax.slicing import slice as lax_slice
  if 0 in aval.shape:
    return full(aval.shape, 0, ct.dtype)
  zero = full((), 0, ct.dtype)
  uncropped = pad(ct, zero, [(-lo, -hi, 0) for lo, hi, _ in padding_config])
  return lax_slice(uncropped, (0,) * aval.ndim, uncropped.shape,
                   tuple(i + 1 for _, _, i in padding_config))


def _pad_transpose(ct, x, padding_value, *, padding_config):
  from minijax.lax.reductions import reduce_sum
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None,
            ad.Zero(padding_value.aval) if ad.is_undefined_primal(padding_value) else None]
  aval = x.aval if ad.is_undefined_primal(x) else get_aval(x)
  t_x = _unpad(ct, aval, padding_config)
  t_v = None
  if ad.is_undefined_primal(padding_value):
    from minijax.lax.elementwise import sub
    all_axes = tuple(range(ct.ndim))
    t_v = sub(reduce_sum(ct, all_axes), reduce_sum(t_x, all_axes))
  return [t_x if ad.is_undefined_primal(x) else None, t_v]


def _pad_batch(args, dims, *, padding_config):
  (x, v), (dx, dv) = args, dims
  config = ((0, 0, 0),) + tuple(padding_config)
  if dv is None:
    size = x.shape[dx]
    x = batching.moveaxis(x, dx, 0)
    return pad(x, v, config), 0
  from minijax.lax.misc import select_n
  size = v.shape[dv]
  x = batching.bdim_at_front(x, dx, size)
  padded = pad(x, full((), 0, x.dtype), config)
  mask = pad(full(x.shape, False, dtypes.bool_), full((), True, dtypes.bool_), config)
  v = broadcast_in_dim(v, padded.shape, (0,))
  return select_n(mask, padded, v), 0


ad.primitive_jvps[pad_p] = _pad_jvp
ad.primitive_transposes[pad_p] = _pad_transpose
batching.primitive_batchers[pad_p] = _pad_batch


def pad(operand, padding_value, padding_config):
  operand = convert_to_array(operand)
  if isinstance(padding_value, dtypes.PYTHON_SCALARS):
    padding_value = full((), padding_value, get_aval(operand).dtype)
  config = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
  return pad_p.bind(operand, padding_value, padding_config=config)


# ---- device_put: a host value becomes an Array (the eager form of a constant)
# Its impl, the only part that touches a device, is installed by minijax.staging; under a
# transformation it is the identity, and under a trace host values are never bound to it
# (they become literals or constants of the jaxpr, lowered into the module).
device_put_p = Primitive("device_put")
device_put_p.def_abstract_eval(lambda x: x)
mlir.register_lowering(device_put_p, lambda ctx, x: x)
ad.deflinear(device_put_p, lambda ct: [ct])
batching.defvectorized(device_put_p)


def convert_to_array(x):
  """Python scalars and numpy values become arrays: Arrays on the default device when
  evaluating eagerly (`device_put_p`); under a trace they stay host values (numpy ones
  canonicalized) and become literals or constants of the jaxpr when bound."""
  if isinstance(x, (*dtypes.PYTHON_SCALARS, np.ndarray, np.generic)):
    if isinstance(x, (np.ndarray, np.generic)):
      x = np.asarray(x, dtypes.canonicalize_dtype(x.dtype))
    return device_put_p.bind(x) if is_eval_context() else x
  if not hasattr(x, "aval"):
    dtypes.dtype_and_weak_type(x)  # raises the TypeError that names the type
  return x


def scalar_constant(x):
  """A 0-d host value (canonical dtype) as the array JAX's `jnp.array`/`lax.full` give: a
  tracer holding a literal under a staging trace (`jit`), else (eagerly, under `grad` or
  `vmap` alone, in `ensure_compile_time_eval`) an Array.  Never the bare host scalar, which
  lacks the array methods (`.astype`, `.at`) that ported code calls.  A numpy array of
  higher rank becomes, under a staging trace, a tracer of a constant of the jaxpr (one per
  array object)."""
  trace = trace_lib.current_trace()
  if not trace_lib._context.eager_constant_folding:
    while trace is not None and not isinstance(trace, trace_lib.EvalTrace):
      if isinstance(trace, DynamicJaxprTrace) and not isinstance(trace, JaxprTrace):
        return trace.new_literal(x)
      trace = trace.parent
  with trace_lib.set_current_trace(trace_lib.eval_trace()):
    return device_put_p.bind(x)


# ---- full (not a primitive: a constant broadcast to a shape)

def wide_constant(x: np.ndarray):
  """Host data of a 64-bit dtype as an array of that dtype even without x64 (explicit
  dtypes under `jax_explicit_x64_dtypes='allow'`): values are put on devices in 32-bit
  dtypes, so the data travel as uint32 words, bitcast back on the device (exactly)."""
  from minijax.lax.complex_ops import complex as make_complex
  from minijax.lax.misc import bitcast_convert_type
  x = np.asarray(x)
  if x.dtype.kind == "c":
    return make_complex(wide_constant(x.real.copy()), wide_constant(x.imag.copy()))
  words = np.ascontiguousarray(x).view(np.uint32).reshape(*x.shape, 2)
  if words.dtype.byteorder == ">" or np.little_endian is False:
    raise NotImplementedError("wide_constant assumes a little-endian host")
  with trace_lib.set_current_trace(trace_lib.eval_trace()):
    data = convert_to_array(words)
  return bitcast_convert_type(data, x.dtype)


def full(shape, fill_value, dtype=None, weak_type=False):
  if np.ndim(fill_value) != 0:
    raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                    f"{np.shape(fill_value)}.")
  dtype = (dtypes.canonicalize_explicit_dtype(dtype) if dtype is not None else
           dtypes.canonicalize_dtype(dtypes.dtype_and_weak_type(fill_value)[0]))
  shape = canonicalize_shape(shape)
  check_sizes("broadcast_in_dim", shape)  # (as JAX's full: its eager path skips the primitive)
  if dtypes.canonicalize_dtype(dtype) != dtype and not hasattr(fill_value, "aval"):
    # an explicit 64-bit dtype under jax_explicit_x64_dtypes='allow'
    scalar = wide_constant(np.asarray(fill_value, dtype))
    return broadcast_in_dim(scalar, shape, ()) if shape else scalar
  if hasattr(fill_value, "aval") and not isinstance(fill_value, np.ndarray):
    from minijax.lax.misc import convert_element_type
    return broadcast_in_dim(convert_element_type(fill_value, dtype, weak_type), shape, ())
  if weak_type:
    scalar = dtypes.as_python_scalar_of(fill_value, dtype)  # a weak value of this dtype
    if scalar is None:
      from minijax.lax.misc import convert_element_type
      scalar = convert_element_type(np.asarray(fill_value, dtype), dtype, True)
    if not shape and not is_eval_context():
      return scalar_constant(scalar)
    return broadcast_in_dim(convert_to_array(scalar), shape, ())
  scalar = np.asarray(fill_value, dtype)
  if is_eval_context():
    return device_put_p.bind(np.broadcast_to(scalar, shape))
  return broadcast_in_dim(scalar, shape, ()) if shape else scalar_constant(scalar)


def broadcast_shapes(*shapes) -> tuple[int, ...]:
  """The shape numpy's broadcasting gives `shapes` (tuples of ints), as `lax` spells it."""
  try:
    return tuple(int(d) for d in np.broadcast_shapes(*map(tuple, shapes)))
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: {tuple(map(tuple, shapes))}") from None
