"""Value-returning host calls: call sites, their custom-call targets, result conversion.

A call site is registered once per lowering (`register_host_call`) as a `HostCall`: the
flat Python function, the avals of its operands and of its results, and whether the
function returns its only result leaf itself (`single`) or a sequence of leaves.  The
lowering then emits a custom call to one of two targets, chosen by `mechanism()` (the same
`tap_mechanism` flag as taps):

`native` (the default) calls minijax's own XLA FFI handler (`csrc/host_call.cc`),
registered here as `minijax_host_call` once the XLA client exists and told its call site by
the `callback` attribute of its `backend_config`.  The handler takes the GIL on the thread
that executes the computation (the one that dispatched it: executables that make host
calls run synchronously, see `runtime/executable.py`), calls the function with read-only
numpy copies of the operands, and copies its results into XLA's buffers, in C when a
result already has the declared dtype and shape, else after `convert_result`;

`callback` calls jaxlib's `xla_ffi_python_cpu_callback` with the index of a
`PythonHostCallback` in the executable's host callbacks, which does the same in Python.

Results follow JAX's rules: each leaf goes through `np.asarray`, then 64-bit values become
32-bit unless x64 is on, and a shape or dtype that still differs from the declared one
raises `RuntimeError` ("Incorrect output shape for return value #0: Expected: (2, 3),
Actual: (3, 2)").  Exceptions are filed in `errors` and re-raised from the call.

Each thread counts the host calls it is inside (`host_call_depth`): a computation
dispatched from inside one must not wait on the token chains of the computation that
called it, which cannot finish before the host function returns (`runtime/executable.py`).
"""
from __future__ import annotations

import functools
import os
import threading
import warnings
from typing import Any, Callable, Sequence

import numpy as np
from jaxlib import xla_client

from minijax.tree_util import internal as tree_util
from minijax.config import config
from minijax.core.dtypes import canonicalize_dtype
from minijax.core.avals import ShapedArray
from minijax.runtime import backend
from minijax.runtime.array import HostArray, host_array
from minijax.runtime.host_calls import errors

try:
  from minijax.runtime.host_calls import _native
  native_import_error: BaseException | None = None
except ImportError as e:  # installed without a compiler, or the build failed
  _native = None
  native_import_error = e

# An extension built before HostArrays (csrc/host_array.h) hands numpy arrays: rebuild it
# (`python setup.py build_ext --inplace`) for Arrays, as JAX hands its callbacks.
_BUILDS_HOST_ARRAYS = _native is not None and hasattr(_native, "set_host_array_type")

NATIVE_TARGET = "minijax_host_call"
NATIVE_CALLBACK_ATTRIBUTE = "callback"  # the backend_config entry the native handler reads
CALLBACK_TARGET = "xla_ffi_python_cpu_callback"
MECHANISMS = ("native", "callback")

if _native is not None:
  host_call_depth: Callable[[], int] = _native.depth
  _enter, _leave = _native.enter, _native.leave
else:
  _local = threading.local()

  def host_call_depth() -> int:
    """How many host calls the calling thread is inside."""
    return getattr(_local, "depth", 0)

  def _enter() -> None:
    _local.depth = host_call_depth() + 1

  def _leave() -> None:
    _local.depth = max(0, host_call_depth() - 1)


def native_available() -> bool:
  return _native is not None


BUILD_ERROR_FILE = "_native_build_error.txt"  # written by setup.py when the build fails


def native_unavailable_reason() -> str:
  """Why the native handler is missing: the build's recorded error, or the import error."""
  recorded = os.path.join(os.path.dirname(os.path.abspath(__file__)), BUILD_ERROR_FILE)
  if os.path.exists(recorded):
    with open(recorded) as f:
      lines = f.read().strip().splitlines()
    return f"its build failed ({lines[0][:300] if lines else 'no reason was recorded'})"
  return f"it could not be imported ({native_import_error})"


_warned = False


def mechanism() -> str:
  """The mechanism new lowerings use: `config.tap_mechanism`, or "callback" (after one
  warning) when "native" is asked for but the extension is missing."""
  global _warned
  requested = config.tap_mechanism
  if requested not in MECHANISMS:
    raise ValueError(f"minijax.config.tap_mechanism is {requested!r}; expected one of "
                     f"{MECHANISMS} (or set MINIJAX_TAP_MECHANISM)")
  if requested == "native" and _native is None:
    if not _warned:
      _warned = True
      warnings.warn(
          "minijax: pure_callback and io_callback use jaxlib's Python callback mechanism "
          "(slower) instead of the native host-call extension, because "
          f"{native_unavailable_reason()}. To rebuild it, install a C++17 compiler and "
          "reinstall minijax (pip install -e ., or with MINIJAX_REQUIRE_NATIVE=1 to see the "
          "compiler's error); MINIJAX_TAP_MECHANISM=callback silences this warning.",
          RuntimeWarning, stacklevel=3)
    return "callback"
  return requested


# ----------------------------------------------------------------------------- results

def convert_result(result_avals: Sequence[Any], value: Any, index: int) -> np.ndarray:
  """Result leaf `index` as a C-contiguous array of its declared aval, by JAX's rules:
  `np.asarray`, 64-bit to 32-bit unless x64 is on, then shape and dtype must match."""
  aval = result_avals[index]
  array = np.asarray(value)
  try:
    canonical = canonicalize_dtype(array.dtype)
  except TypeError:  # not an array dtype minijax knows: the dtype check below says so
    canonical = array.dtype
  if canonical != array.dtype:
    array = array.astype(canonical)
  if array.shape != aval.shape:
    raise RuntimeError(f"Incorrect output shape for return value #{index}: "
                       f"Expected: {aval.shape}, Actual: {array.shape}")
  if array.dtype != aval.dtype:
    raise RuntimeError(f"Incorrect output dtype for return value #{index}: "
                       f"Expected: {aval.dtype}, Actual: {array.dtype}")
  return array if array.flags.c_contiguous else array.copy(order="C")


def check_result_count(leaves: Sequence[Any], expected: int) -> None:
  if len(leaves) != expected:
    raise RuntimeError("Mismatched number of outputs from callback. "
                       f"Expected: {expected}, Actual: {len(leaves)}")


# ----------------------------------------------------------------------------- call sites

class HostCall:
  """A registered call site.  `id` names it to the native handler (-1 without the
  extension); calling it runs the function as the Python-callback mechanism does, returning
  the converted result leaves."""
  __slots__ = ("id", "func", "single", "arg_avals", "result_avals", "convert", "device",
               "api", "__weakref__")

  def __init__(self, func: Callable, single: bool, arg_avals, result_avals,
               direct: Callable | None = None, api: str = "pure_callback"):
    self.func, self.single, self.api = func, single, api
    self.arg_avals, self.result_avals = tuple(arg_avals), tuple(result_avals)
    self.convert = functools.partial(_convert_leaf if single else convert_result,
                                     self.result_avals)
    self.device = backend.get_device(None)  # where the operands' HostArrays say they are
    self.id = -1
    if _native is not None:
      host_avals = tuple(ShapedArray(a.shape, a.dtype) for a in self.arg_avals)
      # A single-result function of positional arrays (`direct`) is called as it is, its
      # result flattened by `convert` when it is not an array already: no Python frame in
      # between on the fast path.
      host = (host_avals, self.device) if _BUILDS_HOST_ARRAYS else None
      self.id = _native.register(direct if direct is not None and single else func, single,
                                 _specs(self.arg_avals), _specs(self.result_avals),
                                 self.convert, *([host] if host else []))
      _by_id[self.id] = self

  def __call__(self, *args) -> tuple:
    _enter()
    try:
      out = self.func(*(host_array(a, self.device) for a in args))
    finally:
      _leave()
    leaves = (out,) if self.single else tuple(out)
    return tuple(self._exact(leaf, i) for i, leaf in enumerate(leaves))

  def _exact(self, leaf, index: int):
    aval = self.result_avals[index]
    if (type(leaf) is np.ndarray and leaf.dtype == aval.dtype and leaf.shape == aval.shape
        and leaf.flags.c_contiguous):
      return leaf
    return self.convert(leaf, index)

  def __repr__(self):
    name = getattr(self.func, "__qualname__", None) or repr(self.func)
    return f"HostCall({self.id}, {name})"


def _specs(avals) -> list[tuple[np.dtype, tuple[int, ...]]]:
  return [(np.dtype(a.dtype), tuple(int(d) for d in a.shape)) for a in avals]


_lock = threading.Lock()
_by_key: dict[tuple, HostCall] = {}


_by_id: dict[int, HostCall] = {}


def _convert_leaf(result_avals, value, index: int) -> np.ndarray:
  """`convert_result` for the only result of a function called directly, which may return
  it inside a pytree (a one-element list, say): its one leaf, or JAX's count error."""
  if not isinstance(value, np.ndarray):
    leaves = tree_util.tree_leaves(value)
    check_result_count(leaves, 1)
    value = leaves[0]
  return convert_result(result_avals, value, index)


def _file_native_exception(exc: BaseException, call_id: int = -1) -> str:
  call = _by_id.get(call_id)
  return errors.file_call_exception(exc, call.api if call is not None else "pure_callback")


def register_host_call(func: Callable, *, single: bool, arg_avals: Sequence[Any],
                       result_avals: Sequence[Any], direct: Callable | None = None,
                       api: str = "pure_callback") -> HostCall:
  """The call site `(func, single, operand and result avals)`, registered on first use.

  `func(*operands)` gets one Array per operand and returns the only result leaf when
  `single`, else a sequence of exactly `len(result_avals)` leaves; `direct`, when given, is
  the same function taking the operands positionally and returning its result as the user
  wrote it.  `api` names the callback's API in the log of its failures.  Call sites live for
  the whole process, as a cached executable may name any of them."""
  arg_key, result_key = tuple(_specs(arg_avals)), tuple(_specs(result_avals))
  try:
    hash(func)
    key: tuple = (func, single, arg_key, result_key, api)
  except TypeError:
    key = (("unhashable", id(func)), single, arg_key, result_key, api)
  with _lock:
    call = _by_key.get(key)
    if call is None:
      call = _by_key[key] = HostCall(func, single, arg_avals, result_avals, direct, api)
    return call


class PythonHostCallback:
  """The host callable of one call site under the Python-callback mechanism: jaxlib calls it
  on the executing thread with numpy arrays (and None for a token, first)."""
  __slots__ = ("call", "takes_token")

  def __init__(self, call: HostCall, takes_token: bool):
    self.call, self.takes_token = call, takes_token

  def __call__(self, *args):
    try:
      results = self.call(*(args[1:] if self.takes_token else args))
    except BaseException as e:  # noqa: BLE001 - filed, re-raised from the call
      raise RuntimeError(errors.file_call_exception(e, self.call.api)) from None
    return (None, *results) if self.takes_token else results

  def __repr__(self):
    return f"PythonHostCallback({self.call!r}, takes_token={self.takes_token})"


# ----------------------------------------------------------------------------- the target

def _register_native_target(client) -> None:
  xla_client.register_custom_call_target(NATIVE_TARGET, _native.handler(), platform="cpu",
                                         api_version=1)


if _native is not None:
  _native.set_error_hook(_file_native_exception)
  if _BUILDS_HOST_ARRAYS:
    _native.set_host_array_type(HostArray)
  backend.on_client_created(_register_native_target)
