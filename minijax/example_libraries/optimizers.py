"""First-order optimizers as (init, update, get_params) triples, with JAX's signatures.

An optimizer is written for one array: `init(x0)` makes its state (a pytree of arrays),
`update(i, g, state)` takes step `i` with gradient `g`, `get_params(state)` reads the
parameters back.  The `optimizer` decorator lifts such a triple to any pytree of
parameters: the state of a whole model is an `OptimizerState`, a pytree (so it passes
through `jit`, `vmap` and friends) holding each parameter's state flattened, the parameter
tree's structure and each state's structure.  `unpack_optimizer_state` turns it into a
nested pytree with `JoinPoint` leaves (for serialization) and `pack_optimizer_state` back.

Step sizes are constants or schedules, functions of the step number; every optimizer
accepts either.

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    state = opt_init(params)
    state = opt_update(step, grads, state)
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

from minijax import numpy as jnp
from minijax.tree_util import internal as tree_util

__all__ = ["OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3", "constant",
           "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "l2_norm", "clip_grads", "JoinPoint",
           "unpack_optimizer_state", "pack_optimizer_state"]

Params = Any
Schedule = Callable[[int], Any]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


class Optimizer(NamedTuple):
  init_fn: Callable
  update_fn: Callable
  params_fn: Callable


def optimizer(opt_maker: Callable) -> Callable[..., Optimizer]:
  """Lifts a maker of per-array (init, update, get_params) functions to pytrees."""

  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      leaves, tree = tree_util.tree_flatten(x0_tree)
      flats = [tree_util.tree_flatten(init(x0)) for x0 in leaves]
      return OptimizerState([f for f, _ in flats], tree, [t for _, t in flats])

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, tree, subtrees = opt_state
      grads, grad_def = tree_util.tree_flatten(grad_tree)
      if grad_def != tree:
        raise TypeError("optimizer update function was passed a gradient tree that did not "
                        "match the parameter tree structure with which it was initialized: "
                        f"parameter tree {tree} and grad tree {grad_def}.")
      new_flat, new_subtrees = [], []
      for g, flat, subtree in zip(grads, states_flat, subtrees):
        new_state = update(i, g, tree_util.tree_unflatten(subtree, flat))
        leaves, new_subtree = tree_util.tree_flatten(new_state)
        if new_subtree != subtree:
          raise TypeError("optimizer update function produced an output structure that did "
                          f"not match its input structure: input {subtree} and output "
                          f"{new_subtree}.")
        new_flat.append(leaves)
        new_subtrees.append(new_subtree)
      return OptimizerState(new_flat, tree, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, tree, subtrees = opt_state
      return tree_util.tree_unflatten(tree, [
          get_params(tree_util.tree_unflatten(s, flat)) for s, flat in zip(subtrees, states_flat)])

    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


def _x(state):
  return state[0]


@optimizer
def sgd(step_size):
  """x <- x - step_size(i) * g."""
  step_size = make_schedule(step_size)
  return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass: float):
  """v <- mass * v + g; x <- x - step_size(i) * v."""
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * velocity, velocity
  return (lambda x0: (x0, jnp.zeros_like(x0))), update, _x


@optimizer
def nesterov(step_size, mass: float):
  """v <- mass * v + g; x <- x - step_size(i) * (mass * v + g)."""
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * (mass * velocity + g), velocity
  return (lambda x0: (x0, jnp.zeros_like(x0))), update, _x


@optimizer
def adagrad(step_size, momentum=0.9):
  """Adagrad (Duchi et al., 2011) with momentum on the scaled gradient."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + jnp.square(g)
    g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
    m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
    return x - step_size(i) * m, g_sq, m
  return init, update, _x


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """a <- gamma * a + (1 - gamma) * g^2; x <- x - step_size(i) * g / sqrt(a + eps)."""
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
    return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
  return (lambda x0: (x0, jnp.zeros_like(x0))), update, _x


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """RMSProp whose scaled steps accumulate in a momentum term."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    return x - mom, avg_sq_grad, mom
  return init, update, _x


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adam (Kingma and Ba, 2015) with bias-corrected moment estimates."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
    return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
  return init, update, _x


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """AdaMax: Adam with an exponentially weighted infinity norm in place of v."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = jnp.maximum(b2 * u, jnp.abs(g))
    x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
    return x, m, u
  return init, update, _x


@optimizer
def sm3(step_size, momentum=0.9):
  """SM3 (Anil et al., 2019): one accumulator per axis instead of per element."""
  step_size = make_schedule(step_size)

  def along(ndim, v, axis):
    index = [None] * ndim
    index[axis] = slice(None)
    return v[tuple(index)]

  def init(x0):
    shape = jnp.shape(x0)
    x0 = jnp.atleast_1d(x0)
    return x0, jnp.zeros_like(x0), [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape], shape

  def update(i, g, state):
    x, m, vs, shape = state
    accum = functools.reduce(jnp.minimum, [along(g.ndim, v, k) for k, v in enumerate(vs)])
    accum = accum + jnp.square(g)
    accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
    m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
    x = x - step_size(i) * m
    vs = [accum.max(tuple(a for a in range(x.ndim) if a != k)) for k in range(x.ndim)]
    return x, m, vs, shape
  return init, update, lambda state: state[0].reshape(state[3])


# ----------------------------------------------------------------------------- schedules

def constant(step_size) -> Schedule:
  return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
  return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
  if staircase:
    return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
  return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
  def schedule(step_num):
    step_num = jnp.minimum(step_num, decay_steps)
    step_mult = (1 - step_num / decay_steps) ** power
    return step_mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
  """values[k] for steps in (boundaries[k-1], boundaries[k]]."""
  boundaries, values = jnp.array(boundaries), jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("boundaries and values must be sequences")
  if not boundaries.shape[0] == values.shape[0] - 1:
    raise ValueError("boundaries length must be one shorter than values length")
  return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(type(scalar_or_schedule))


# ----------------------------------------------------------------------------- utilities

def l2_norm(tree):
  """The l2 norm of all the arrays of a pytree together."""
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in tree_util.tree_leaves(tree)))


def clip_grads(grad_tree, max_norm):
  """Scales a pytree of gradients down to l2 norm `max_norm` if it is larger."""
  norm = l2_norm(grad_tree)
  return tree_util.tree_map(
      lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
  """Marks where the parameter pytree ends and a parameter's state pytree begins."""

  def __init__(self, subtree):
    self.subtree = subtree

  def __iter__(self):
    yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState):
  """The state as the parameter pytree with a JoinPoint (holding that parameter's state
  pytree) at each leaf."""
  states_flat, tree_def, subtree_defs = opt_state
  return tree_util.tree_unflatten(tree_def, [
      JoinPoint(tree_util.tree_unflatten(s, flat)) for s, flat in zip(subtree_defs, states_flat)])


def pack_optimizer_state(marked_pytree) -> OptimizerState:
  """The inverse of `unpack_optimizer_state`."""
  sentinels, tree_def = tree_util.tree_flatten(marked_pytree)
  if not all(isinstance(s, JoinPoint) for s in sentinels):
    raise TypeError("pack_optimizer_state expects a pytree whose leaves are JoinPoints, as "
                    "unpack_optimizer_state makes")
  flats = [tree_util.tree_flatten(s.subtree) for s in sentinels]
  return OptimizerState([f for f, _ in flats], tree_def, [t for _, t in flats])
