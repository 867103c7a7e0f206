"""Lowering to jaxlib's CPU LAPACK kernels: typed-FFI custom calls, as JAX emits them on CPU.

`lapack_call` emits one `mhlo.custom_call` to a kernel such as `lapack_sgetrf_ffi` (the
dtype picks the letter: s, d, c, z), with `api_version = 4` and the kernel's attributes in
`backend_config`.  The kernels take batches of matrices natively (every leading axis is a
batch axis) in Fortran order: operands and results of matrix rank get the column-major
layout `(n-2, n-1, n-3, ..., 0)` (minor to major), the others (pivots, taus, eigenvalues,
info) the default row-major one.  A kernel may write a result in place of an operand
(`aliases`, result index by operand index), as getrf does with its matrix.

The runtime registers the targets with the CPU client (`minijax/runtime/lapack.py`); here
they are only named.  jaxlib's kernels find the LAPACK routines themselves (through scipy, a
dependency of jaxlib) when `_lapack.initialize()` first runs, which takes a few hundred
milliseconds, so `lapack_call` runs it the first time a module calls one, as JAX's lowering
does.  A kernel reports failure in an `info` result; `nan_where_failed` replaces the
matrices of failed batch elements by NaNs, as JAX does.
"""
from __future__ import annotations

import functools
from typing import Mapping, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import ShapedArray
from minijax.lowering import mlir

_PREFIX = {dtypes.float32: "s", dtypes.float64: "d", dtypes.complex64: "c",
           dtypes.complex128: "z"}


def target(base: str, dtype) -> str:
  """`lapack_<s|d|c|z><base>`, e.g. `target("getrf_ffi", float32)` is lapack_sgetrf_ffi."""
  prefix = _PREFIX.get(np.dtype(dtype))
  if prefix is None:
    raise TypeError(f"LAPACK has no {base.split('_')[0]} for dtype {dtype}; it takes float32, "
                    "float64, complex64 and complex128")
  return f"lapack_{prefix}{base}"


@functools.cache
def _initialize() -> None:
  from jaxlib.cpu import _lapack
  _lapack.initialize()


@functools.cache
def _kernel_names() -> frozenset[str]:
  from jaxlib.cpu import _lapack
  return frozenset(_lapack.registrations())


def prepare_kernel(name: str) -> None:
  """Finds the LAPACK routines when `name` is one of jaxlib's kernels (any module that
  calls one must: uninitialised, a kernel crashes the process)."""
  if name in _kernel_names():
    _initialize()


def u8(char: str) -> ir.IntegerAttr:
  """A one-character attribute, as the kernels take `mode`, `uplo`, `side`, ..."""
  return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), ord(char))


def _layout(aval, matrix_rank: int) -> tuple[int, ...]:
  nd = len(aval.shape)
  if nd == matrix_rank and nd >= 2:
    return (nd - 2, nd - 1) + tuple(range(nd - 3, -1, -1))
  return tuple(reversed(range(nd)))


def lapack_call(name: str, operands: Sequence[ir.Value], avals_in: Sequence[ShapedArray],
                avals_out: Sequence[ShapedArray], attributes: Mapping[str, ir.Attribute] = {},
                aliases: Mapping[int, int] = {}) -> list[ir.Value]:
  """Emits the custom call to kernel `name` and returns its results."""
  prepare_kernel(name)
  matrix_rank = max(len(a.shape) for a in avals_in)
  op = mlir.custom_call(
      name, result_types=[mlir.aval_to_ir_type(a) for a in avals_out], operands=operands,
      backend_config=dict(attributes), operand_output_aliases=dict(aliases),
      operand_layouts=[_layout(a, matrix_rank) for a in avals_in],
      result_layouts=[_layout(a, matrix_rank) for a in avals_out])
  return list(op.results)


def info_aval(batch: Sequence[int]) -> ShapedArray:
  return ShapedArray(tuple(batch), dtypes.int32)


def succeeded(info: ir.Value, batch: Sequence[int], direction: str = "EQ") -> ir.Value:
  """`info == 0` (or `info >= 0` with direction GE) per batch element."""
  zero = mlir.ir_constant(np.zeros(tuple(batch), np.int32))
  return mhlo.CompareOp(info, zero, mhlo.ComparisonDirectionAttr.get(direction),
                        compare_type=mhlo.ComparisonTypeAttr.get("SIGNED")).result


def nan_where_failed(x: ir.Value, aval: ShapedArray, ok: ir.Value,
                     batch: Sequence[int]) -> ir.Value:
  """`x` with the matrices (or vectors) of failed batch elements replaced by NaNs."""
  which_type = mlir.aval_to_ir_type(ShapedArray(aval.shape, dtypes.bool_))
  which = mhlo.BroadcastInDimOp(which_type, ok, list(range(len(batch)))).result
  nan = np.nan + 1j * np.nan if np.issubdtype(aval.dtype, np.complexfloating) else np.nan
  return mhlo.SelectOp(which, x, mlir.splat_constant(nan, aval.shape, aval.dtype)).result
