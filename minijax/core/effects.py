"""Effects as data, each class declaring its own policy.

Equations and jaxprs carry a frozenset of effects.  An effect is an instance of a subclass
of `Effect`; it may carry data (one effect per resource, say), declared as the fields of a
frozen dataclass, and effects still compare, hash and sort deterministically: by class and
data, in the order of `sort_key` (class name, module, data).

What the rest of minijax may do with an equation that has an effect is decided by the
effect's class, in these flags, and read in one place each (the functions below):

  ordered                       gets a token: the lowering threads one token per ordered
                                effect through every function, call, branch and loop, and
                                the runtime chains executions by it (`ordered_effects`);
  allowed_in_control_flow       may appear in `cond` branches, `while` loops and `scan`
                                bodies (`check_allowed(..., "control_flow", ...)`);
  allowed_in_remat              may appear inside `checkpoint` under reverse mode (which
                                may run it again in the backward pass);
  allowed_in_custom_derivatives may appear inside `custom_jvp`/`custom_vjp` functions;
  allowed_with_batched_predicate may appear in a `cond` branch or a `while_loop` under
                                `vmap` with a batched predicate (which runs them for lanes
                                that did not ask for it); an ordered one may not appear in a
                                `while_loop` under `vmap` at all;
  kept_when_unused              dead-code elimination and partial evaluation keep the
                                equation even when nothing reads its outputs
                                (`must_keep`);
  runs_with_zero_cotangents     the backward pass runs the equation's transpose even when
                                all its output cotangents are symbolically zero, with
                                zeros instantiated (a tap on cotangents fires in every
                                backward pass: `run_with_zero_cotangents`);
  ordered_across_devices        (ordered effects) may appear in a computation over several
                                devices (each device keeps its own order); JAX refuses an
                                ordered `debug.print` there, and so does minijax;
  tracked_at_runtime            (unordered effects) the runtime tracks each execution of
                                a program that has it, for `effects_barrier`
                                (`unordered_effects`); an effect that lowers to nothing
                                (a `sow`) sets False and costs nothing once compiled;
  deferrable                    (effects of host functions that return nothing: taps,
                                debug callbacks) may be delivered after the computation
                                instead of during it: under `tap_delivery="deferred"` the
                                deferral pass (`interpreters.deferral`) turns the
                                equations into outputs (`deferrable_effects`);
  delivered_by_return           (effects of host functions delivered on the receiver
                                threads: debug callbacks) the call that runs a computation
                                with it returns only once those calls have been made, as
                                JAX's do (`delivered_by_return`); taps leave it False: the
                                seed delivers them asynchronously, up to `barrier_wait`;
  lowerable                     may reach the lowering at all (False: lowering a jaxpr
                                that has it raises, as JAX's "Cannot lower jaxpr with
                                effects"; `check_lowerable`);
  must_be_discharged            may never reach the lowering: a discharge pass rewrites
                                the jaxpr into one without it first (mutable state: the
                                effects of refs, below; `needs_discharge`).

The defaults are the conservative ones for a side effect: allowed everywhere, never
dropped, transposed even with zero cotangents, unordered.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar, Iterable


class Effect:
  """Base class of effects; subclasses set the policy flags (see the module docstring)."""
  ordered: ClassVar[bool] = False
  allowed_in_control_flow: ClassVar[bool] = True
  allowed_in_remat: ClassVar[bool] = True
  allowed_in_custom_derivatives: ClassVar[bool] = True
  allowed_with_batched_predicate: ClassVar[bool] = True
  kept_when_unused: ClassVar[bool] = True
  runs_with_zero_cotangents: ClassVar[bool] = True
  ordered_across_devices: ClassVar[bool] = True
  must_be_discharged: ClassVar[bool] = False
  deferrable: ClassVar[bool] = False
  delivered_by_return: ClassVar[bool] = False
  tracked_at_runtime: ClassVar[bool] = True
  lowerable: ClassVar[bool] = True

  def data(self) -> tuple:
    """What tells two effects of one class apart: a dataclass's fields, else nothing."""
    if dataclasses.is_dataclass(self):
      return tuple(getattr(self, f.name) for f in dataclasses.fields(self))
    return ()

  def __eq__(self, other):
    return type(self) is type(other) and self.data() == other.data()

  def __hash__(self):
    return hash((type(self), self.data()))

  def __repr__(self):
    data = self.data()
    name = type(self).__name__
    return f"{name}({', '.join(map(repr, data))})" if data else name


def sort_key(effect: Effect) -> tuple:
  """The fixed order of effects (and so of tokens): by class name, module, data, then repr
  (effects with identity equality, as JAX's, differ only there)."""
  cls = type(effect)
  return (cls.__name__, cls.__module__, repr(effect.data()), repr(effect))


no_effects: frozenset = frozenset()

_POLICIES = {
    "control_flow": ("allowed_in_control_flow", "control flow (cond, while_loop, scan)"),
    "remat": ("allowed_in_remat", "checkpoint (remat)"),
    "custom_derivatives": ("allowed_in_custom_derivatives", "custom_jvp and custom_vjp"),
}


def ordered_effects(effects: Iterable[Effect]) -> tuple[Effect, ...]:
  """The ordered effects among `effects`, in the one fixed order tokens use."""
  if isinstance(effects, frozenset):
    return _ordered_effects_of_set(effects)
  return tuple(sorted((e for e in effects if e.ordered), key=sort_key))


@functools.lru_cache(maxsize=1024)
def _ordered_effects_of_set(effects: frozenset) -> tuple[Effect, ...]:
  return tuple(sorted((e for e in effects if e.ordered), key=sort_key))


def unordered_effects(effects: Iterable[Effect]) -> tuple[Effect, ...]:
  """The unordered effects among `effects` that the runtime tracks."""
  return tuple(sorted((e for e in effects if not e.ordered and e.tracked_at_runtime),
                      key=sort_key))


def must_keep(effects: frozenset) -> bool:
  """Whether an equation with `effects` stays even when its outputs are unused."""
  return any(e.kept_when_unused for e in effects)


def run_with_zero_cotangents(effects: frozenset) -> bool:
  """Whether the backward pass runs an equation with `effects` when its cotangents are zero."""
  return any(e.runs_with_zero_cotangents for e in effects)


def check_allowed(effects: Iterable[Effect], where: str, construct: str) -> None:
  """Raises NotImplementedError naming the effects that may not appear in `where`
  ("control_flow", "remat" or "custom_derivatives"), as used by `construct`."""
  flag, description = _POLICIES[where]
  disallowed = sorted((e for e in effects if not getattr(e, flag)), key=sort_key)
  if disallowed:
    raise NotImplementedError(
        f"Effects not supported in {construct}: {disallowed}. These effects may not appear "
        f"in {description}: their class sets `{flag} = False`.")


def check_lowerable(effects: Iterable[Effect]) -> None:
  """Raises JAX's ValueError when any of `effects` may not be lowered (`lowerable`)."""
  refused = [e for e in effects if not e.lowerable]
  if refused:
    raise ValueError(f"Cannot lower jaxpr with effects: {{{', '.join(map(repr, refused))}}}")


def has_deferrable(effects: Iterable[Effect]) -> bool:
  """Whether any of `effects` may be delivered after its computation (`deferrable`)."""
  return any(e.deferrable for e in effects)


def delivered_by_return(effects: Iterable[Effect]) -> bool:
  """Whether a call running a computation with `effects` waits for their host calls to be
  delivered before it returns (`delivered_by_return`)."""
  return any(getattr(e, "delivered_by_return", False) for e in effects)  # (or a name)


def needs_discharge(effects: Iterable[Effect]) -> bool:
  """Whether a jaxpr with `effects` must be discharged (`interpreters.discharge`) before
  it is lowered: the one place that reads `must_be_discharged`."""
  return any(e.must_be_discharged for e in effects)


# ----------------------------------------------------------------------------- input effects

class InputEffect(Effect):
  """An effect on one input, named by its position: among the operands of an equation
  (`input_index` counts them) or, at a jaxpr's level, among the jaxpr's inputs (its
  constvars, then its invars).  A jaxpr's effects are re-indexed to its own inputs
  (`core.jaxpr.jaxpr_effects`), and an effect on a value the jaxpr makes itself stops at
  its boundary.  JAX's `JaxprInputEffect` (`minijax._src.effects`) is one."""
  input_index: int

  def with_index(self, index: int) -> "InputEffect":
    return type(self)(index)


# ----------------------------------------------------------------------------- state

class RefEffect(InputEffect):
  """An effect on one mutable array reference (a `Ref`), an input effect on the ref:
  a jaxpr's effects say which of its inputs it reads, writes or accumulates into.  Refs
  need no tokens: once the jaxpr is discharged, the order of reads and writes is data
  dependence."""
  must_be_discharged = True

  def __repr__(self):
    return f"{type(self).__name__.removesuffix('Effect')}<{self.input_index}>"


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class ReadEffect(RefEffect):
  """`get`: reads the ref; an unused read may be dropped."""
  input_index: int
  kept_when_unused = False


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class WriteEffect(RefEffect):
  """`swap` (and so `set`): writes the ref."""
  input_index: int


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class AccumEffect(RefEffect):
  """`addupdate`: adds into the ref."""
  input_index: int


class InternalMutableArrayEffect(Effect):
  """Creating a ref (`new_ref`) or freezing one (`freeze`) inside a traced function: the
  jaxpr holds state, so it must be discharged before lowering, although no ref crosses its
  boundary.  The equation may go when nothing uses the ref."""
  must_be_discharged = True
  kept_when_unused = False
  runs_with_zero_cotangents = False


internal_mutable_array_effect = InternalMutableArrayEffect()


def union(effect_sets: Iterable[frozenset]) -> frozenset:
  result = no_effects
  for effects in effect_sets:
    if effects:
      result = result | effects
  return result
