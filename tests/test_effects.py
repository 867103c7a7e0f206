"""Effects as data: each effect class declares its policy, and every stage reads it.

An effect may carry data and still compare, hash and sort deterministically; the policy
flags decide whether an effect may appear in control flow, remat and custom derivatives,
whether dead-code elimination keeps it, and whether the backward pass runs it with zero
cotangents.  `effects_barrier` waits for every effect and tap."""
from __future__ import annotations

import dataclasses
import re
import threading

import numpy as np
import pytest
from jaxlib.mlir.dialects import mhlo

import minijax
from minijax import lax
from minijax.core import effects as effects_lib
from minijax.core.effects import Effect
from minijax.core.primitive import Primitive
from minijax.experimental import host_callback as hcb
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.lowering import mlir
from minijax.lowering.tokens import TokenSet


@dataclasses.dataclass(frozen=True)
class Resource(Effect):
  """An ordered effect per named resource."""
  ordered = True
  name: str


class Quiet(Effect):
  """An effect that nothing needs to keep, that may not go into control flow, remat or
  custom derivatives, and that the backward pass skips when its cotangents are zero."""
  kept_when_unused = False
  allowed_in_control_flow = False
  allowed_in_remat = False
  allowed_in_custom_derivatives = False
  runs_with_zero_cotangents = False


def _identity_with(effect, name):
  """A primitive `x -> x` with `effect`, its lowering threading the token when ordered,
  and linear rules."""
  prim = Primitive(name)
  prim.def_effectful_abstract_eval(lambda x: (x, frozenset([effect])))

  def lowering(ctx, x):
    if effect.ordered:
      ctx.set_tokens_out(TokenSet({effect: mhlo.AfterAllOp([ctx.tokens_in.get(effect)]).result}))
    return x
  mlir.register_lowering(prim, lowering)
  ad.deflinear(prim, lambda ct: [prim.bind(ct)])
  batching.defvectorized(prim)
  return prim


log_a_p = _identity_with(Resource("a"), "log_a")
log_b_p = _identity_with(Resource("b"), "log_b")
quiet_p = _identity_with(Quiet(), "quiet")


def test_effects_that_carry_data_compare_hash_and_sort_by_class_and_data():
  assert Resource("a") == Resource("a") and Resource("a") != Resource("b")
  assert hash(Resource("a")) == hash(Resource("a"))
  assert len({Resource("a"), Resource("a"), Resource("b"), Quiet()}) == 3
  assert Quiet() == Quiet() and Quiet() != Resource("a")
  assert repr(Resource("a")) == "Resource(name='a')" and repr(Quiet()) == "Quiet"
  mixed = [Resource("b"), Quiet(), Resource("a")]
  assert sorted(mixed, key=effects_lib.sort_key) == [Quiet(), Resource("a"), Resource("b")]
  assert effects_lib.ordered_effects(frozenset(mixed)) == (Resource("a"), Resource("b"))


def test_each_resource_gets_its_own_token_in_a_fixed_order(runtime_token_lowering):
  def f(x):
    return log_b_p.bind(log_a_p.bind(log_b_p.bind(x)))
  text = minijax.jit(f).lower(np.float32(1.0)).as_text()
  main = next(line for line in text.splitlines() if "func.func public @main" in line)
  assert main.count("!mhlo.token") == 4  # two token arguments, two token results
  assert float(minijax.jit(f)(np.float32(3.0))) == 3.0


@pytest.mark.parametrize("construct, fn", [
    ("`cond`", lambda x: lax.cond(True, quiet_p.bind, lambda y: y, x)),  # (JAX's names)
    ("`while`", lambda x: lax.while_loop(lambda c: c < 1.0, quiet_p.bind, x)),
    ("`scan`", lambda x: lax.scan(lambda c, _: (quiet_p.bind(c), None), x, None, length=2)[0]),
    # As in JAX, checkpoint refuses such an effect when reverse mode splits it.
    ("partial-eval of `checkpoint`/`remat`",
     minijax.grad(minijax.checkpoint(lambda x: quiet_p.bind(x)))),
])
def test_an_effect_that_forbids_a_construct_is_rejected_there_by_name(construct, fn):
  with pytest.raises(NotImplementedError, match=f"Effects not supported in {re.escape(construct)}"
                                                r": \[Quiet\]"):
    minijax.make_jaxpr(fn)(np.float32(0.0))


def test_an_effect_that_forbids_custom_derivatives_is_rejected_there():
  @minijax.custom_jvp
  def f(x):
    return quiet_p.bind(x)
  f.defjvp(lambda primals, tangents: (f(*primals), tangents[0]))
  with pytest.raises(NotImplementedError, match="allowed_in_custom_derivatives = False"):
    minijax.make_jaxpr(f)(np.float32(0.0))


def test_dead_code_elimination_keeps_an_unused_effect_only_when_its_class_says_so():
  def f(x):
    quiet_p.bind(x)
    log_a_p.bind(x)
    return x
  closed = minijax.make_jaxpr(f)(np.float32(0.0))
  kept, _ = pe.dce_jaxpr(closed.jaxpr, [True])
  assert [str(e.primitive) for e in kept.eqns] == ["log_a"]


def test_the_backward_pass_runs_an_effect_with_zero_cotangents_only_when_its_class_says_so():
  ran = []
  seen_p = _identity_with(Quiet(), "seen_quiet")
  ad.primitive_transposes[seen_p] = lambda ct, x: ran.append("quiet") or [ct]
  loud_p = _identity_with(Resource("c"), "seen_loud")
  ad.primitive_transposes[loud_p] = lambda ct, x: ran.append("loud") or [ct]

  def f(x):
    seen_p.bind(x)   # outputs unused: zero cotangents
    loud_p.bind(x)
    return x * 2.0
  assert float(minijax.grad(f)(np.float32(1.0))) == 2.0
  assert ran == ["loud"]


def test_effects_barrier_waits_for_taps_and_raises_what_a_tap_function_raised():
  got = []
  release = threading.Event()

  def slow(x, transforms):
    release.wait(5)
    got.append(float(x))

  minijax.jit(lambda x: hcb.id_tap(slow, x))(np.float32(4.0))
  release.set()
  minijax.effects_barrier()
  assert got == [4.0]

  def broken(x, transforms):
    raise ValueError("boom")
  minijax.jit(lambda x: hcb.id_tap(broken, x))(np.float32(1.0))
  with pytest.raises(hcb.TapFunctionException):
    minijax.effects_barrier()
  hcb.barrier_wait("a named barrier")  # the tap-flavoured form takes JAX's logging_name


# ----------------------------------------------------------------------------- JAX's effect API

def test_effects_written_against_jaxs_api_register_lower_and_order_as_in_jax(
    runtime_token_lowering):
  # JAX 0.10.2 runs this same program (jax._src.effects, core.Primitive, mlir lowering rules
  # that pass the tokens on) with these outcomes.
  from minijax._src import effects as jax_effects
  from minijax.extend import mlir as jax_mlir

  class OrderedEffect(jax_effects.Effect):
    def __init__(self, name):
      self.name = name
    __repr__ = lambda self: self.name  # noqa: E731

  class BasicEffect(OrderedEffect):
    pass

  class Unlowerable(jax_effects.Effect):
    __repr__ = lambda self: "unlowerable"  # noqa: E731

  class LoopEffect(OrderedEffect):
    pass

  for effect_set, effect_type in [("lowerable_effects", OrderedEffect),
                                  ("ordered_effects", OrderedEffect),
                                  ("control_flow_allowed_effects", LoopEffect)]:
    getattr(jax_effects, effect_set).add_type(effect_type)
  BasicEffect.ordered = False  # (a subclass of a registered type: registered; this one not)
  foo, foo2, bar, loop = OrderedEffect("foo"), OrderedEffect("foo2"), BasicEffect("bar"), \
      LoopEffect("loop")
  effect_p = Primitive("jax_style_effect")
  effect_p.multiple_results = True
  effect_p.def_effectful_abstract_eval(lambda *avals, effect: (avals, {effect}))
  effect_p.def_impl(lambda *args, effect: args)

  def lowering(ctx, *args, effect):
    ctx.set_tokens_out(ctx.tokens_in)
    return args
  jax_mlir.register_lowering(effect_p, lowering)

  def f(x):
    effect_p.bind(effect=foo)
    effect_p.bind(effect=bar)
    return x + 1.0
  jaxpr = minijax.make_jaxpr(f)(2.0)
  assert sorted(map(repr, jaxpr.effects)) == ["bar", "foo"]
  assert jax_effects.ordered_effects.filter_in(jaxpr.effects) == [foo]
  assert jax_effects.ordered_effects.filter_not_in(jaxpr.effects) == [bar]
  assert float(minijax.jit(f)(2.0)) == 3.0
  assert foo != OrderedEffect("foo") and len({foo, OrderedEffect("foo")}) == 2  # identity
  with pytest.raises(ValueError, match=r"^Cannot lower jaxpr with effects: \{unlowerable\}"):
    minijax.jit(lambda x: (effect_p.bind(effect=Unlowerable()), x)[1]).lower(1.0)
  cond = lambda e: lambda x: lax.cond(True, lambda x: (effect_p.bind(effect=e), x)[1],  # noqa
                                      lambda x: x, x)
  minijax.make_jaxpr(cond(loop))(1.0)
  for e in (foo, bar):
    with pytest.raises(NotImplementedError, match=rf"Effects not supported in `cond`: \[{e}\]"):
      minijax.make_jaxpr(cond(e))(1.0)
  with pytest.raises(NotImplementedError, match=r"Effects not supported in `while`: \[bar\]"):
    minijax.make_jaxpr(lambda x: lax.while_loop(
        lambda c: c < 3.0, lambda c: (effect_p.bind(effect=bar), c + 1.0)[1], x))(1.0)
  # two ordered effects: two tokens in and out of main, in one fixed order
  text = minijax.jit(lambda x: (effect_p.bind(effect=foo), effect_p.bind(effect=foo2),
                                x)[2]).lower(1.0).as_text()
  main = next(line for line in text.splitlines() if "func.func public @main" in line)
  assert main.count("!mhlo.token") == 4


def test_jaxs_input_effects_name_the_jaxpr_input_through_calls_and_control_flow():
  from minijax._src import effects as jax_effects

  class InputEffect(jax_effects.JaxprInputEffect):
    pass
  jax_effects.control_flow_allowed_effects.add_type(InputEffect)
  jax_effects.lowerable_effects.add_type(InputEffect)
  p = Primitive("input_effect")
  p.multiple_results = True
  p.def_effectful_abstract_eval(lambda *avals, index: ([], {InputEffect(index)}))
  p.def_impl(lambda *args, index: [])
  mlir.register_lowering(p, lambda ctx, *args, index: [])

  def effects_of(f, *args):
    return minijax.make_jaxpr(f)(*args).effects

  assert effects_of(lambda x, y: p.bind(y, x, index=0), 0, 1) == {InputEffect(1)}
  g = minijax.jit(lambda x, y: (p.bind(x, index=0), y)[1])
  assert effects_of(lambda a, b: g(b, a), 0, 1) == {InputEffect(1)}
  # cond's operands start with the branch index; while's with both consts
  assert effects_of(lambda a, b: lax.cond(True, lambda a, b: (p.bind(b, index=0), a)[1],
                                          lambda a, b: a, a, b), 0, 1) == {InputEffect(1)}
  assert effects_of(lambda a, b, c: lax.while_loop(
      lambda x: (p.bind(b, index=0), x < c)[1], lambda x: (p.bind(a, index=0), x + 1.0)[1],
      0.0), 1.0, 2.0, 3.0) == {InputEffect(0), InputEffect(1)}
  assert effects_of(lambda a, b: lax.scan(lambda c, _: (p.bind(b, index=0), (c, None))[1], a,
                                          None, length=2)[0], 0, 1) == {InputEffect(1)}
  assert effects_of(minijax.checkpoint(lambda a, b: (p.bind(b, index=0), a)[1]), 1.0, 2.0) \
      == {InputEffect(1)}
  # (minijax drops an effect on a value made inside, as for refs; JAX refuses the jaxpr)
  assert effects_of(lambda a: (p.bind(a * 2, index=0), a)[1], 1.0) == frozenset()
  assert float(minijax.jit(lambda a, b: (p.bind(b, index=0), a + b)[1])(1.0, 2.0)) == 3.0
