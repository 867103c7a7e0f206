"""A stand-in for `jax._src.test_util` written on JAX's public API only.

JAX's test files import `jax._src.test_util as jtu`; the conformance runner hands them this
module instead, with JAX or with minijax behind `import jax`, so both sides run the same
helpers.  It carries what the test files the runner targets use: `JaxTestCase` and its
assertions, `sample_product` (the same deterministic sample of a product of cases as JAX's,
so the test names are JAX's), random input makers, device predicates and decorators,
`check_grads` (the public `jax.test_util` one: the gradient check is work under test), the
dtype tables, and `capture_stdout`.  It never does work under test itself.  The counters of
JAX's private caches (`count_*`, `assertCacheMisses`) have no public equivalent: they raise
`NeedsJaxInternals`, so the tests that use them fail the same way on both sides and are left
out.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import math
import os
import re
import sys
import tempfile
import textwrap
import unittest
import warnings
import zlib

from absl.testing import parameterized
import numpy as np
import numpy.random as npr

import jax
import jax.numpy as jnp
from jax import tree_util
import jax.test_util

from .internals import NeedsJaxInternals

NUM_GENERATED_CASES = int(os.getenv("JAX_NUM_GENERATED_CASES", "10"))
MISSING_FLAGS: set[str] = set()  # config flags the backend lacks (reported by the runner)

check_grads = jax.test_util.check_grads
check_jvp = jax.test_util.check_jvp
check_vjp = jax.test_util.check_vjp

# ---------------------------------------------------------------- config

_UNSET = object()


def _read_flag(name):
  return getattr(jax.config, name)


def _set_flag(name, value):
  """Sets a flag; returns its old value, or _UNSET when the backend has no such flag."""
  try:
    old = _read_flag(name)
  except AttributeError:
    MISSING_FLAGS.add(name)
    return _UNSET
  if old != value:
    jax.config.update(name, value)
  return old


@contextlib.contextmanager
def config_context(**flags):
  """Sets flags for the block: with JAX's public context manager of the same name where there
  is one (`jax.debug_nans(True)`, thread-local as JAX's test_util has it), else globally."""
  with contextlib.ExitStack() as stack:
    for name, value in flags.items():
      manager = getattr(jax, name.removeprefix("jax_"), None)
      if callable(manager) and name.startswith("jax_") and not isinstance(manager, type):
        try:
          stack.enter_context(manager(value))
          continue
        except (TypeError, AttributeError):
          pass
      old = _set_flag(name, value)
      if old is not _UNSET:
        stack.callback(lambda name=name, old=old: _read_flag(name) != old and
                       jax.config.update(name, old))
    yield


global_config_context = thread_local_config_context = config_context


def with_config(**flags):
  def decorator(cls):
    merged = {}
    for base in reversed(cls.__mro__[1:]):
      merged.update(getattr(base, "_default_config", {}))
    cls._default_config = {**merged, **flags}
    return cls
  return decorator


with_global_config = with_config

# ---------------------------------------------------------------- devices


def device_under_test() -> str:
  return os.getenv("JAX_TEST_DUT") or jax.default_backend()


def _device_tags():
  return {device_under_test()}


def test_device_matches(device_types) -> bool:
  assert not isinstance(device_types, str), device_types
  return bool(_device_tags() & set(device_types))


test_device_matches.__test__ = False


def _device_filter(predicate, skip_reason):
  def decorator(test_method):
    @functools.wraps(test_method)
    def wrapper(self, *args, **kwargs):
      if not predicate():
        raise unittest.SkipTest(skip_reason or f"{test_method.__name__} not supported on "
                                f"{device_under_test()}")
      return test_method(self, *args, **kwargs)
    return wrapper
  return decorator


def skip_on_devices(*disabled, skip_reason=None):
  return _device_filter(lambda: not test_device_matches(disabled),
                        skip_reason or "Skipped on devices with tags: " + ", ".join(disabled))


def run_on_devices(*enabled, skip_reason=None):
  return _device_filter(lambda: test_device_matches(enabled), skip_reason or
                        "Skipped unless running on devices with tags: " + ", ".join(enabled))


def device_supports_buffer_donation():
  return _device_filter(lambda: test_device_matches(["cpu", "cuda", "rocm", "tpu"]), None)


def is_device_rocm(): return False
def is_device_cuda(): return device_under_test() == "gpu"
def is_cloud_tpu(): return False
def is_device_tpu(version=None, variant=""): return device_under_test() == "tpu"
def is_device_tpu_at_least(version): return False
def get_tpu_version(): raise ValueError("not a TPU")
def is_cuda_compute_capability_at_least(capability): return False
def is_optimized_build(): return True
def is_sanitized(): return False
def is_asan(): return False
def is_msan(): return False
def is_tsan(): return False
def is_gil_disabled(): return not getattr(sys, "_is_gil_enabled", lambda: True)()


def request_cpu_devices(n: int):
  """At least `n` CPU devices, as JAX's `jax_num_cpu_devices` flag asks (before the backend starts).

  The runner's `--devices` (JAX_CONFORMANCE_DEVICES) takes precedence; a backend without the
  flag keeps the count it was started with (the runner sets it from the file).
  """
  if os.getenv("JAX_CONFORMANCE_DEVICES"):
    return
  try:
    if jax.config.jax_num_cpu_devices < n:
      jax.config.update("jax_num_cpu_devices", n)
  except (AttributeError, RuntimeError):
    pass


@contextlib.contextmanager
def set_host_platform_device_count(n: int):
  request_cpu_devices(n)
  yield


def create_mesh(mesh_shape, axis_names, iota_order=False, axis_types=None):
  size = math.prod(mesh_shape)
  if len(jax.devices()) < size:
    raise unittest.SkipTest(f"Test requires {size} global devices and found {len(jax.devices())}.")
  if iota_order:
    devices = sorted(jax.devices(), key=lambda d: d.id)[:size]
    return jax.sharding.Mesh(np.array(devices).reshape(mesh_shape), axis_names,
                             **({"axis_types": axis_types} if axis_types else {}))
  axis_type = getattr(jax.sharding, "AxisType", None)
  if axis_types is None and axis_type is not None:  # JAX's test meshes are Auto on every axis
    axis_types = (axis_type.Auto,) * len(mesh_shape)
  return jax.make_mesh(mesh_shape, axis_names,
                       **({"axis_types": axis_types} if axis_types is not None else {}))


# ---------------------------------------------------------------- decorators


def skip_on_flag(flag_name, skip_value):
  def decorator(test_method):
    @functools.wraps(test_method)
    def wrapper(self, *args, **kwargs):
      try:
        value = _read_flag(flag_name)
      except AttributeError:
        value = os.getenv(flag_name.upper()) not in (None, "", "0", "false", "False") \
          if isinstance(skip_value, bool) else None
      if value == skip_value:
        raise unittest.SkipTest(f"{test_method.__name__} not supported when FLAGS.{flag_name} "
                                f"is {value}")
      return test_method(self, *args, **kwargs)
    return wrapper
  return decorator


def pytest_mark_if_available(marker: str):
  def wrap(func_or_class):
    try:
      import pytest
    except ImportError:
      return func_or_class
    return getattr(pytest.mark, marker)(func_or_class)
  return wrap


def thread_unsafe_test(condition=True):
  return lambda f: f


def thread_unsafe_test_class(condition=True):
  return lambda c: c


def skip_under_pytest(reason: str):
  return unittest.skipIf("pytest" in sys.modules, "Running under pytest: " + reason)


@contextlib.contextmanager
def ignore_warning(**kw):
  with warnings.catch_warnings():
    warnings.filterwarnings("ignore", **kw)
    yield


class JaxTestLoader(unittest.TestLoader):
  pass


# ---------------------------------------------------------------- test cases


def sample_product_testcases(*args, **kw):
  """A deterministic sample of NUM_GENERATED_CASES of the product (the same cases as JAX's)."""
  args = [list(a) for a in args]
  kw = [(k, list(v)) for k, v in kw.items()]
  n = math.prod(len(a) for a in args) * math.prod(len(v) for _, v in kw)
  cases = []
  for i in _choice(n, min(n, NUM_GENERATED_CASES)):
    case = {}
    for a in args:
      case.update(a[i % len(a)])
      i //= len(a)
    for k, v in kw:
      case[k] = v[i % len(v)]
      i //= len(v)
    cases.append(case)
  return cases


@functools.cache
def _choice(n, m):
  return np.random.RandomState(42).choice(n, size=m, replace=False)


def sample_product(*args, **kw):
  return parameterized.parameters(*sample_product_testcases(*args, **kw))


def named_cases_from_sampler(gen):
  seen, retries = set(), 0
  rng = npr.RandomState(42)

  def choose_one(x):
    x = x if isinstance(x, (list, tuple)) else list(x)
    return [x[rng.randint(len(x))]]

  while len(seen) < NUM_GENERATED_CASES and retries < 100:
    retries += 1
    cases = list(gen(choose_one))
    if not cases or cases[0]["testcase_name"] in seen:
      continue
    retries = 0
    seen.add(cases[0]["testcase_name"])
    yield cases[0]


def cases_from_gens(*gens):
  per_size = NUM_GENERATED_CASES // 3 + 1
  for size in (1, 3, 10):
    for i in range(per_size):
      yield (f"_{size}_{i}",) + tuple(gen(size) for gen in gens)


# ---------------------------------------------------------------- dtypes and tolerances


def _enable_x64() -> bool:
  return bool(jax.config.jax_enable_x64)


def supported_dtypes():
  types = {np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, jnp.bfloat16, np.float16, np.float32, np.float64, np.complex64,
           np.complex128}
  if not _enable_x64():
    types -= {np.uint64, np.int64, np.float64, np.complex128}
  return types


class _Dtypes:
  """JAX's dtype tables, filtered by what the device (and the x64 flag) supports."""

  def supported(self, dtypes):
    ok = supported_dtypes()
    return [d for d in dtypes if d in ok]

  custom_floats = property(lambda self: self.supported([jnp.bfloat16]))
  floating = property(lambda self: self.supported([np.float32, np.float64]))
  all_floating = property(lambda self: self.supported([jnp.bfloat16, np.float16, np.float32,
                                                       np.float64]))
  integer = property(lambda self: self.supported([np.int32, np.int64]))
  all_integer = property(lambda self: self.supported([np.int8, np.int16, np.int32, np.int64]))
  unsigned = property(lambda self: self.supported([np.uint32, np.uint64]))
  all_unsigned = property(lambda self: self.supported([np.uint8, np.uint16, np.uint32,
                                                       np.uint64]))
  complex = property(lambda self: self.supported([np.complex64, np.complex128]))
  boolean = property(lambda self: self.supported([np.bool_]))
  inexact = property(lambda self: self.floating + self.complex)
  all_inexact = property(lambda self: self.all_floating + self.complex)
  numeric = property(lambda self: self.floating + self.integer + self.unsigned + self.complex)
  all = property(lambda self: (self.all_floating + self.all_integer + self.all_unsigned +
                               self.complex + self.boolean))


dtypes = _Dtypes()

_TOL = {np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.int16): 0,
        np.dtype(np.int32): 0, np.dtype(np.int64): 0, np.dtype(np.uint8): 0,
        np.dtype(np.uint16): 0, np.dtype(np.uint32): 0, np.dtype(np.uint64): 0,
        np.dtype(jnp.bfloat16): 1e-2, np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6,
        np.dtype(np.float64): 1e-15, np.dtype(np.complex64): 1e-6,
        np.dtype(np.complex128): 1e-15}
default_gradient_tolerance = {np.dtype(jnp.bfloat16): 1e-1, np.dtype(np.float16): 1e-2,
                              np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
                              np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5}


def default_tolerance():
  return _TOL


def _dtype(x):
  if hasattr(x, "dtype"):
    return x.dtype
  if type(x) in (bool, int, float, complex):
    return jax.dtypes.canonicalize_dtype({bool: np.bool_, int: np.int64, float: np.float64,
                                          complex: np.complex128}[type(x)])
  return np.asarray(x).dtype


def _canonical(dtype):
  try:
    return jax.dtypes.canonicalize_dtype(dtype, allow_extended_dtype=True)
  except TypeError:
    return jax.dtypes.canonicalize_dtype(dtype)


def tolerance(dtype, tol=None):
  tol = {} if tol is None else tol
  if not isinstance(tol, dict):
    return tol
  tol = {np.dtype(k): v for k, v in tol.items()}
  dtype = _canonical(np.dtype(dtype))
  return tol.get(dtype, _TOL.get(np.dtype(dtype), 0))


def _assert_numpy_allclose(a, b, atol=None, rtol=None, err_msg=""):
  if a.dtype == b.dtype and a.dtype == getattr(jax.dtypes, "float0", None):
    np.testing.assert_array_equal(a, b, err_msg=err_msg)
    return
  upcast = lambda x: x.astype(np.float32) if x.dtype == jnp.bfloat16 else x
  a, b = upcast(a), upcast(b)
  kw = {}
  if atol: kw["atol"] = atol
  if rtol: kw["rtol"] = rtol
  with np.errstate(invalid="ignore"):
    np.testing.assert_allclose(a, b, **kw, err_msg=err_msg)


def _check_dtypes_match(xs, ys):
  def check(x, y):
    if _enable_x64():
      assert _dtype(x) == _dtype(y)
    else:
      assert _canonical(_dtype(x)) == _canonical(_dtype(y))
  tree_util.tree_map(check, xs, ys)


def check_eq(xs, ys, err_msg=""):
  tree_util.tree_map(lambda x, y: _assert_numpy_allclose(np.asarray(x), np.asarray(y),
                                                         err_msg=err_msg), xs, ys)


def check_raises(thunk, err_type, msg):
  try:
    thunk()
    assert False
  except err_type as e:
    assert str(e).startswith(msg), f"\n{e}\n\n{msg}\n"


def check_raises_regexp(thunk, err_type, pattern):
  try:
    thunk()
    assert False
  except err_type as e:
    assert re.match(pattern, str(e)), f"{e}\n\n{pattern}\n"


def format_shape_dtype_string(shape, dtype):
  name = np.dtype(dtype).name
  if shape is NUMPY_SCALAR_SHAPE:
    return name
  if shape is PYTHON_SCALAR_SHAPE:
    return "py" + name
  if isinstance(shape, int):
    return f"{name}[{shape},]"
  return f"{name}[{','.join(str(d) for d in tuple(shape))}]"


def dtype_str(dtype):
  return np.dtype(dtype).name


def sanitize_test_name(name: str) -> str:
  """A test name with the characters `-k` cannot take made `_`, as JAX's harnesses name."""
  return re.sub(r"[ \"'\[\](){}<>=,._]+", "_", name)


def numpy_version():
  return tuple(int(x) for x in re.findall(r"\d+", np.__version__)[:3])


def parse_version(v: str):
  return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

# ---------------------------------------------------------------- random inputs


class ScalarShape:
  def __len__(self): return 0
  def __getitem__(self, i): raise IndexError(f"index {i} out of range.")


NUMPY_SCALAR_SHAPE = type("_NumpyScalar", (ScalarShape,), {})()
PYTHON_SCALAR_SHAPE = type("_PythonScalar", (ScalarShape,), {})()


def _dims(shape):
  if isinstance(shape, ScalarShape):
    return ()
  return tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)


def _cast_to_shape(value, shape, dtype):
  if shape is NUMPY_SCALAR_SHAPE:
    return np.dtype(dtype).type(value)
  if shape is PYTHON_SCALAR_SHAPE:
    return np.asarray(value).item()
  return value


def _rand_dtype(rand, shape, dtype, scale=1., post=lambda x: x):
  dtype = np.dtype(dtype)
  if np.issubdtype(dtype, np.unsignedinteger):
    r = lambda: np.asarray(scale * abs(rand(*_dims(shape)))).astype(dtype)
  else:
    r = lambda: np.asarray(scale * rand(*_dims(shape))).astype(dtype)
  vals = r() + 1.0j * r() if np.issubdtype(dtype, np.complexfloating) else r()
  return _cast_to_shape(np.asarray(post(vals), dtype), shape, dtype)


def rand_default(rng, scale=3):
  return functools.partial(_rand_dtype, rng.randn, scale=scale)


def rand_small(rng):
  return functools.partial(_rand_dtype, rng.randn, scale=1e-3)


def rand_nonzero(rng):
  post = lambda x: np.where(x == 0, np.array(1, dtype=x.dtype), x)
  return functools.partial(_rand_dtype, rng.randn, scale=3, post=post)


def rand_positive(rng):
  return functools.partial(_rand_dtype, rng.rand, scale=2, post=lambda x: x + 1)


def rand_uniform(rng, low=0.0, high=1.0):
  return functools.partial(_rand_dtype, rng.rand, post=lambda x: x * (high - low) + low)


def rand_int(rng, low=0, high=None):
  def fn(shape, dtype):
    hi = high if high is not None else np.iinfo(dtype).max
    gen = dtype if np.issubdtype(dtype, np.integer) else np.int64
    return rng.randint(low, high=hi, size=shape, dtype=gen).astype(dtype)
  return fn


def rand_bool(rng):
  return lambda shape, dtype: _cast_to_shape(
      np.asarray(rng.rand(*_dims(shape)) < 0.5, dtype=dtype), shape, dtype)


# ---------------------------------------------------------------- output capture


@contextlib.contextmanager
def _capture_output(fp):
  """Captures what is written to `fp`'s file descriptor (Python and native writes alike)."""
  captured = None

  def get_output():
    if captured is None:
      raise ValueError("get_output() called while the context is active.")
    return captured

  with tempfile.NamedTemporaryFile(mode="w+", encoding="utf-8") as f:
    fp.flush()
    saved = os.dup(fp.fileno())
    os.dup2(f.fileno(), fp.fileno())
    try:
      yield get_output
    finally:
      fp.flush()
      os.fsync(fp.fileno())
      f.seek(0)
      captured = f.read()
      os.dup2(saved, fp.fileno())
      os.close(saved)


def capture_stdout():
  return _capture_output(sys.stdout)


def capture_stderr():
  return _capture_output(sys.stderr)

# ---------------------------------------------------------------- JAX internals


def _internal(name):
  def counter(*args, **kwargs):
    raise NeedsJaxInternals(f"jax._src.test_util.{name} (counts JAX's private caches)")
  counter.__name__ = name
  return counter


for _name in ("count_jit_and_pmap_lowerings", "count_pjit_cpp_cache_miss",
              "count_aot_jit_cpp_cache_miss", "count_jit_tracing_cache_miss",
              "count_jit_compilation_cache_miss", "count_primitive_compiles",
              "count_internal_device_puts", "count_device_put", "count_events",
              "count_subjaxpr_to_hlo_conversion", "collect_lowered_jaxprs",
              "assert_num_jit_and_pmap_compilations",
              "count_compilation_after_persistent_cache_miss"):
  globals()[_name] = _internal(_name)



def _jit(f, *args, **kwargs):
  return jax.jit(f, *args, **kwargs)


def _noop_jit(f, *args, **kwargs):
  return f


_jit._name, _noop_jit._name = "jit", "noop"
JIT_IMPLEMENTATION = (_jit, _noop_jit)


class JaxTestCase(parameterized.TestCase):
  """JAX's test case: per-test configuration, a seeded `rng()`, and array assertions."""

  _default_config = {
      "jax_enable_checks": True,
      "jax_numpy_dtype_promotion": "strict",
      "jax_numpy_rank_promotion": "raise",
      "jax_traceback_filtering": "off",
      "jax_legacy_prng_key": "error",
  }

  def setUp(self):
    super().setUp()
    self._rng = npr.RandomState(zlib.adler32(self._testMethodName.encode()))
    self.enterContext(config_context(**self._default_config))

  def rng(self):
    return self._rng

  def assertArraysEqual(self, actual, desired, *, check_dtypes=True, err_msg="",
                        allow_object_dtype=False, verbose=True):
    if check_dtypes:
      self.assertDtypesMatch(actual, desired)
    actual, desired = np.asarray(actual), np.asarray(desired)
    if not allow_object_dtype and object in (actual.dtype, desired.dtype):
      raise TypeError("assertArraysEqual may be poorly behaved when np.asarray casts to "
                      "dtype=object; pass allow_object_dtype=True to proceed anyway.")
    with np.errstate(over="ignore"):
      np.testing.assert_array_equal(actual, desired, err_msg=err_msg, verbose=verbose)

  def assertArraysAllClose(self, actual, desired, *, check_dtypes=True, atol=None, rtol=None,
                           err_msg=""):
    self.assertEqual(actual.shape, desired.shape)
    atol = max(tolerance(_dtype(actual), atol), tolerance(_dtype(desired), atol))
    rtol = max(tolerance(_dtype(actual), rtol), tolerance(_dtype(desired), rtol))
    _assert_numpy_allclose(actual, desired, atol=atol, rtol=rtol, err_msg=err_msg)
    if check_dtypes:
      self.assertDtypesMatch(actual, desired)

  def assertDtypesMatch(self, actual, desired, *, canonicalize_dtypes=True):
    if not _enable_x64() and canonicalize_dtypes:
      self.assertEqual(_canonical(_dtype(actual)), _canonical(_dtype(desired)))
    else:
      self.assertEqual(_dtype(actual), _dtype(desired))

  def assertAllClose(self, actual, desired, *, check_dtypes=True, atol=None, rtol=None,
                     canonicalize_dtypes=True, err_msg=""):
    kw = dict(check_dtypes=check_dtypes, atol=atol, rtol=rtol,
              canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)
    is_seq = lambda x: _iterable(x) and not hasattr(x, "__array__")
    if isinstance(actual, dict):
      self.assertIsInstance(desired, dict)
      self.assertEqual(set(actual), set(desired))
      for k in actual:
        self.assertAllClose(actual[k], desired[k], **kw)
    elif is_seq(actual):
      if not is_seq(desired):
        self.fail(f"Expected sequence, got {desired}")
      self.assertEqual(len(actual), len(desired))
      for a, d in zip(actual, desired):
        self.assertAllClose(a, d, **kw)
    elif hasattr(actual, "__array__") or np.isscalar(actual):
      if not (hasattr(desired, "__array__") or np.isscalar(desired)):
        self.fail(f"Expected array-like, got {desired}")
      if check_dtypes:
        self.assertDtypesMatch(actual, desired, canonicalize_dtypes=canonicalize_dtypes)
      self.assertArraysAllClose(np.asarray(actual), np.asarray(desired), check_dtypes=False,
                                atol=atol, rtol=rtol, err_msg=err_msg)
    elif actual == desired:
      return
    else:
      raise TypeError((type(actual), type(desired)))

  def assertMultiLineStrippedEqual(self, expected, what):
    clean = lambda s: re.sub(r"\s*\n\s*", "\n", textwrap.dedent(s).strip())
    if clean(what) != clean(expected):
      print(f"Found\n{what}\n")
      self.assertMultiLineEqual(clean(expected), clean(what),
                                msg=f"Found\n{what}\nExpecting\n{expected}")

  @contextlib.contextmanager
  def assertNoWarnings(self):
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      yield

  def assertCacheMisses(self, func, **counts):
    raise NeedsJaxInternals("jax._src.test_util.assertCacheMisses (counts JAX's private caches)")

  def _CompileAndCheck(self, fun, args_maker, *, check_dtypes=True, tol=None, rtol=None,
                       atol=None, check_cache_misses=True):
    """Eager and jitted results agree, and a second jitted call does not run Python."""
    args = args_maker()
    python_should_be_executing = True

    def wrapped(*args):
      self.assertTrue(python_should_be_executing)
      return fun(*args)

    python_ans = fun(*args)
    self.assertEqual(tree_util.tree_map(np.shape, python_ans),
                     tree_util.tree_map(lambda x: np.shape(np.asarray(x)), python_ans))
    python_ans = fun(*args)
    cfun = jax.jit(wrapped)
    monitored = cfun(*args)
    python_should_be_executing = False
    compiled = cfun(*args)
    close = functools.partial(self.assertAllClose, check_dtypes=check_dtypes, atol=atol or tol,
                              rtol=rtol or tol)
    close(monitored, python_ans)
    close(compiled, python_ans)
    args = args_maker()
    python_should_be_executing = True
    python_ans = fun(*args)
    python_should_be_executing = False
    close(cfun(*args), python_ans)

  def _CheckAgainstNumpy(self, numpy_reference_op, lax_op, args_maker, check_dtypes=True,
                         tol=None, atol=None, rtol=None, canonicalize_dtypes=True):
    args = args_maker()
    self.assertAllClose(lax_op(*args), numpy_reference_op(*args), check_dtypes=check_dtypes,
                        atol=atol or tol, rtol=rtol or tol,
                        canonicalize_dtypes=canonicalize_dtypes)


def _iterable(x) -> bool:
  try:
    iter(x)
  except TypeError:
    return False
  return True


class BufferDonationTestCase(JaxTestCase):
  def assertDeleted(self, x):
    self.assertTrue(x.is_deleted())

  def assertNotDeleted(self, x):
    self.assertFalse(x.is_deleted())
