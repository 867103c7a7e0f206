"""Taps of values that XLA updates in place (a loop's carry), which the native tap call
hands back aliased so that XLA need not copy them for it (`callbacks.common.emit_queue_call`,
`lowering.mlir.updatable_in_place`): every tap still sees the value of its own iteration,
the loop computes what numpy computes, and only loop carries and values a loop body computed
are aliased, never a caller's buffer, a loop invariant or a value outside loops."""
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.experimental import host_callback as hcb
from minijax.lax.control_flow import fori_loop, while_loop
from tests.conftest import using_tap_mechanism

N = 1 << 14  # 64 KiB of float32: large enough for the tap queue's pooled buffers
STEPS = 6


@pytest.fixture(params=["native", "callback"])
def mechanism(request):
  """Each behaviour test runs under both tap mechanisms."""
  yield from using_tap_mechanism(request.param, hcb.barrier_wait)


@pytest.fixture
def native():
  """Only the native tap call aliases its operands: the lowering tests use it."""
  yield from using_tap_mechanism("native", hcb.barrier_wait)


def start():
  return np.arange(N, dtype=np.float32) / N


INVARIANT = np.linspace(-1.0, 1.0, N, dtype=np.float32)


# name: (loop body (tap, i, v) -> new v, numpy step (v) -> (tapped values, new v))
BODIES = {
    "carry then update": (lambda tap, i, v: lax.add(tap(v), 1.0),
                          lambda v: ([v], v + 1)),
    "tap result and carry both read": (lambda tap, i, v: lax.add(tap(v), v),
                                       lambda v: ([v], v + v)),
    "intermediate read after": (lambda tap, i, v: lax.add(tap(lax.mul(v, 2.0)), lax.mul(v, 2.0)),
                                lambda v: ([2 * v], 4 * v)),
    "loop invariant": (lambda tap, i, v: lax.add(v, tap(INVARIANT)),
                       lambda v: ([INVARIANT], v + INVARIANT)),
    "same value twice": (lambda tap, i, v: lax.add(tap((v, v))[0], 1.0),
                         lambda v: ([(v, v)], v + 1)),
}

def debug_tap(rec, ordered):
  """A tap written with debug.callback: calls `rec` as id_tap would, returns its operand."""
  def tap(x):
    leaves = x if isinstance(x, tuple) else (x,)
    minijax.debug.callback(lambda *a: rec(a if isinstance(x, tuple) else a[0], ()), *leaves,
                           ordered=ordered)
    return x
  return tap


TAPS = {
    "id_tap ordered": lambda rec: lambda x: hcb.id_tap(rec, x),
    "id_tap unordered": lambda rec: lambda x: hcb.id_tap(rec, x, ordered=False),
    "debug.callback": lambda rec: debug_tap(rec, ordered=False),
    "debug.callback ordered": lambda rec: debug_tap(rec, ordered=True),
}


def expected(step):
  v, tapped = start(), []
  for _ in range(STEPS):
    seen, v = step(v)
    tapped.extend(seen)
  return tapped, v


def assert_taps(got, want):
  assert len(got) == len(want)
  for g, w in zip(got, want):
    if isinstance(w, tuple):
      assert all(np.array_equal(np.asarray(a), b) for a, b in zip(g, w))
    else:
      np.testing.assert_array_equal(np.asarray(g), w)


@pytest.mark.parametrize("tap_name", list(TAPS))
@pytest.mark.parametrize("body_name", list(BODIES))
def test_every_tap_in_a_loop_sees_its_own_iteration(mechanism, body_name, tap_name):
  body, step = BODIES[body_name]
  got = []
  tap = TAPS[tap_name](lambda a, t: got.append(np.array(a) if not isinstance(a, tuple)
                                               else tuple(np.array(x) for x in a)))
  out = minijax.jit(lambda x: fori_loop(0, STEPS, lambda i, v: body(tap, i, v), x))(start())
  hcb.barrier_wait()
  want_taps, want_out = expected(step)
  np.testing.assert_array_equal(np.asarray(out), want_out)
  assert_taps(got, want_taps)


def test_a_while_loop_with_swapped_carries_taps_each_iteration(mechanism):
  got = []

  def body(carry):
    i, a, b = carry
    return i + 1, b, lax.add(hcb.id_tap(lambda x, t: got.append(np.array(x)), a), 1.0)

  x0, y0 = start(), start() * 3
  _, a, b = minijax.jit(lambda a, b: while_loop(lambda c: c[0] < STEPS, body, (0, a, b)))(x0, y0)
  hcb.barrier_wait()
  want, (p, q) = [], (x0, y0)
  for _ in range(STEPS):
    want.append(p)
    p, q = q, p + 1
  assert_taps(got, want)
  np.testing.assert_array_equal(np.asarray(a), p)
  np.testing.assert_array_equal(np.asarray(b), q)


def _copies(text):
  return sum(" copy(" in line for line in text.splitlines())


@pytest.mark.usefixtures("immediate_taps")
def test_a_tapped_loop_carry_is_aliased_and_not_copied(native):
  x = start()
  loop = lambda tap: lambda x: fori_loop(0, STEPS, lambda i, v: lax.add(tap(v), 1.0), x)
  tapped = minijax.jit(loop(lambda v: hcb.id_tap(lambda a, t: None, v))).lower(x)
  plain = minijax.jit(loop(lambda v: v)).lower(x)
  assert "output_operand_aliases" in tapped.as_text()
  assert _copies(tapped.compile().as_text()) == _copies(plain.compile().as_text())


@pytest.mark.parametrize("name, fun", [
    ("an argument", lambda x: lax.add(hcb.id_tap(lambda a, t: None, x), 1.0)),
    ("a value outside loops", lambda x: lax.add(hcb.id_tap(lambda a, t: None, lax.mul(x, 2.0)),
                                                1.0)),
    ("a loop invariant", lambda x: fori_loop(
        0, STEPS, lambda i, v: lax.add(v, hcb.id_tap(lambda a, t: None, x)), x)),
])
def test_an_argument_an_invariant_or_a_value_outside_loops_is_not_aliased(native, name, fun):
  assert "output_operand_aliases" not in minijax.jit(fun).lower(start()).as_text()
