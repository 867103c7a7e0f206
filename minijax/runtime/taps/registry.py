"""The consumer registry: what a receiver needs to turn a tap's bytes back into a call.

A consumer is a tap function together with the transforms applied to it, the tree
structure of the tapped value and the shape and dtype of every leaf.  Lowering registers
one (`register_consumer`) and bakes its id into the custom call; the receiver looks the id
up (`consumer`) for every tap.  Ids come from a counter and are never reused.

Registering the same consumer again (the same tap function, transforms, tree and leaf
types) returns the same id.  Tap functions are told apart by `api_util.function_key`,
never by an `__eq__` of their own: two functions that compare equal (frozen dataclasses,
say) are two consumers, while `obj.method`, a new object at each access, is the same.

A consumer lives as long as something needs it.  A lowering that registers one passes its
list of `keepalives` as `owner`, and gets a `ConsumerRef` appended to it; the compiled
executable keeps that list, so the consumer (and its tap function) lives at least as long
as the executable.  When the last `ConsumerRef` of a consumer goes, the consumer is
*released* (`take_released`): new registrations make a new consumer, but the record stays
until the receivers have delivered every tap that could still carry its id, which the
receiver module establishes before it calls `forget` (see `receiver.sweep_retired`).  A
consumer registered without an `owner` lives for the whole process.
"""
from __future__ import annotations

import collections
import inspect
import itertools
import os
import threading
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from minijax.tree_util import internal as tree_util
from minijax.api_util import function_key
from minijax.core.avals import ShapedArray
from minijax.runtime.array import HostArray


class Consumer:
  """A registered tap function and the layout of the values it receives."""
  __slots__ = ("id", "func", "transforms", "treedef", "dtypes", "shapes", "counts", "nbytes",
               "wants_device", "deliver", "_leaves", "host_arrays", "_plain")

  def __init__(self, id: int, func: Callable, transforms: tuple, treedef: Any,
               dtypes: tuple, shapes: tuple, host_arrays=None):
    self.id = id
    # None, or (avals, device): the tap function receives HostArrays of these avals
    self.host_arrays = host_arrays
    self.func = func
    self.transforms = transforms
    self.treedef = treedef
    self.dtypes = dtypes
    self.shapes = shapes
    self.counts = tuple(int(np.prod(s, dtype=np.int64)) for s in shapes)
    self.nbytes = sum(c * d.itemsize for c, d in zip(self.counts, dtypes))
    self.wants_device = _accepts_device_keyword(func)
    self._leaves = tuple(zip(shapes, dtypes, self.counts))
    self.deliver = self._make_deliver()
    # one array, handed over as it is
    self._plain = self.is_simple and not self.is_multi and host_arrays is None

  def unpack(self, payload, offsets) -> list:
    """Numpy views of the arrays in a native payload (copies for the Python queues), as
    HostArrays for a consumer that wants them."""
    if offsets is None:
      arrays = payload
    elif len(offsets) != len(self._leaves):
      raise RuntimeError(f"tap for consumer {self.id} carried {len(offsets)} arrays, but its "
                         f"tap function expects {len(self._leaves)}")
    else:
      arrays = [np.ndarray(shape, dtype, payload, offset) if count else np.empty(shape, dtype)
                for (shape, dtype, count), offset in zip(self._leaves, offsets)]
    if self.host_arrays is None:
      return arrays
    avals, device = self.host_arrays
    for a in arrays:
      a.flags.writeable = False
    return [HostArray(a, aval, device) for a, aval in zip(arrays, avals)]

  def simple_entry(self) -> tuple:
    """What the native queues need to deliver a simple tap themselves (`deliver`): for one
    array (func, transforms, shape, dtype, nbytes[, (aval, device)]); for several (func,
    transforms, shapes, dtypes, nbytes, None or (avals, device), treedef), the treedef None
    when the value is the flat tuple of the arrays."""
    if self.is_multi:
      tree = None if self.treedef == _flat_tuple(len(self.shapes)) else self.treedef
      return (self.func, self.transforms, self.shapes, self.dtypes, self.nbytes,
              self.host_arrays, tree)
    entry = (self.func, self.transforms, self.shapes[0], self.dtypes[0], self.nbytes)
    if self.host_arrays is None:
      return entry
    avals, device = self.host_arrays
    return (*entry, (avals[0], device))

  @property
  def is_simple(self) -> bool:
    """A tap the native queues deliver themselves: one or more arrays, none empty, to a tap
    function without a `device` keyword."""
    return not self.wants_device and all(self.counts)

  @property
  def is_multi(self) -> bool:
    """Whether the value is not one array (a tree of several, or of one array in a node)."""
    return len(self._leaves) != 1 or self.treedef.num_nodes != 1

  def _make_deliver(self) -> Callable:
    """`deliver(payload, offsets, device)` calls the tap function with the value a tap
    carried.  The simple tap skips the tree and list machinery: this runs on the receiver
    thread once per tap (the native queues deliver simple taps themselves)."""
    if not self.is_simple or self.is_multi:
      return self._deliver
    (shape, dtype, _), = self._leaves
    func, transforms, ndarray = self.func, self.transforms, np.ndarray

    if self.host_arrays is not None:
      unpack = self.unpack

      def deliver_host_array(payload, offsets, device) -> None:
        func(unpack(payload, offsets)[0], transforms)
      return deliver_host_array

    def deliver(payload, offsets, device) -> None:
      func(payload[0] if offsets is None else ndarray(shape, dtype, payload, offsets[0]),
           transforms)
    return deliver

  def deliver_values(self, arrays: list, device) -> None:
    """Calls the tap function with host arrays of its leaves (a deferred tap's values)."""
    if self._plain:
      self.func(arrays[0], self.transforms)
    else:
      self.deliver(arrays, None, device)

  def _deliver(self, payload, offsets, device) -> None:
    arg = self.treedef.unflatten(self.unpack(payload, offsets))
    if self.wants_device:
      self.func(arg, self.transforms, device=device)
    else:
      self.func(arg, self.transforms)

  def __repr__(self):
    name = getattr(self.func, "__qualname__", None) or repr(self.func)
    leaves = ", ".join(f"{d.name}{list(s)}" for d, s in zip(self.dtypes, self.shapes))
    return f"Consumer({self.id}, {name}, transforms={self.transforms}, leaves=({leaves}))"


def _flat_tuple(n: int):
  """The tree of a tuple of `n` leaves."""
  return tree_util.treedef_tuple([tree_util.tree_structure(0)] * n)


def _accepts_device_keyword(func: Callable) -> bool:
  try:
    params = inspect.signature(func).parameters
  except (TypeError, ValueError):
    return False
  p = params.get("device")
  return p is not None and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)


def unpack_transform(transform: tuple) -> tuple[str, dict]:
  """`(name, *params)` as the tap primitive stores it, or `(name, dict)`, to `(name, dict)`."""
  name, *params = transform
  if len(params) == 1 and isinstance(params[0], dict):
    return name, dict(params[0])
  if name == "batch":
    return name, {"batch_dims": params[0]}
  if params:
    raise ValueError(f"transform {name!r} takes no parameters, got {params}")
  return name, {}


def _freeze(transform: tuple) -> tuple:
  name, params = unpack_transform(transform)
  return (name, tuple(sorted(params.items())))


class ConsumerRef:
  """One owner's hold on a consumer (see the module docstring); when the last one is
  dropped, the consumer is released.  A weak reference to each hold, with the C method
  `_released.append` as its callback, tells `take_released`: no Python code runs when a
  hold goes (in any thread, inside the garbage collector, maybe while this module holds
  `_lock`), where a `__del__` could run a pending signal handler whose KeyboardInterrupt
  Python would then ignore."""
  __slots__ = ("consumer", "__weakref__")

  def __init__(self, consumer: Consumer):
    self.consumer = consumer

  def __repr__(self):
    return f"ConsumerRef({self.consumer.id})"


_lock = threading.Lock()
_ids = itertools.count(1)  # 0 stays unused, so that a zeroed attribute is never a real consumer
_by_key: dict[tuple, Consumer] = {}  # keyed on function_key(tap function)
consumers_by_id: dict[int, Consumer] = {}  # read by receivers without the lock
# The consumers whose taps the native queues deliver themselves (see `Consumer.is_simple`):
# id -> `Consumer.simple_entry()`.
simple_consumers: dict[int, tuple] = {}
_owners: dict[int, int] = {}  # consumer id -> number of live ConsumerRefs; absent: permanent
_keys: dict[int, tuple] = {}  # consumer id -> its key in `_by_key`, for owned consumers
_released: collections.deque = collections.deque()  # weak references to ConsumerRefs gone
_holds: dict[weakref.ref, Consumer] = {}  # weak reference to a ConsumerRef -> its consumer


def register_consumer(func: Callable, transforms: Sequence[tuple], treedef: Any,
                      avals: Sequence[Any], owner: list | None = None,
                      host_arrays_on: Any = None) -> int:
  """The id of the consumer `(func, transforms, treedef, leaf shapes and dtypes)`.

  `transforms` holds `(name, *params)` tuples (or `(name, params_dict)`), outermost last;
  tap functions receive them as `(name, params_dict)` pairs.  `avals` are the leaves'
  abstract values (anything with `.shape` and `.dtype`), in `treedef`'s leaf order.  With
  an `owner` (a lowering's keepalive list) the consumer lives while that list does (see the
  module docstring); without, for the whole process.  With `host_arrays_on` (a device) the
  tap function receives `HostArray`s on that device instead of numpy arrays.
  """
  frozen, dtypes, shapes = _layout(func, transforms, treedef, avals)
  key = (function_key(func), frozen, treedef, dtypes, shapes, host_arrays_on)
  with _lock:
    record = _by_key.get(key)
    if record is None:
      record = _consumer(next(_ids), func, frozen, treedef, dtypes, shapes, host_arrays_on)
      _by_key[key] = record
      consumers_by_id[record.id] = record
      if record.is_simple:
        simple_consumers[record.id] = record.simple_entry()
      if owner is not None:
        _owners[record.id] = 0
        _keys[record.id] = key
    if owner is None:
      _owners.pop(record.id, None)  # wanted for good
      _keys.pop(record.id, None)
    elif record.id in _owners:
      _owners[record.id] += 1
    if owner is not None:
      hold = ConsumerRef(record)
      _holds[weakref.ref(hold, _released.append)] = record
      owner.append(hold)
    return record.id


def make_consumer(func: Callable, transforms: Sequence[tuple], treedef: Any,
                  avals: Sequence[Any], host_arrays_on: Any = None) -> Consumer:
  """A consumer as `register_consumer` would make it, but not registered (its id is 0): for
  deferred taps, whose delivery plan holds the consumer itself."""
  frozen, dtypes, shapes = _layout(func, transforms, treedef, avals)
  return _consumer(0, func, frozen, treedef, dtypes, shapes, host_arrays_on)


def _layout(func, transforms, treedef, avals) -> tuple[tuple, tuple, tuple]:
  """The checked (frozen transforms, leaf dtypes, leaf shapes) of a consumer."""
  if not callable(func):
    raise TypeError(f"a tap function must be callable, got {type(func).__name__}: {func!r:.80}")
  if treedef.num_leaves != len(avals):
    raise ValueError(f"tree structure {treedef} has {treedef.num_leaves} leaves, but "
                     f"{len(avals)} avals were given")
  dtypes = tuple(np.dtype(a.dtype) for a in avals)
  shapes = tuple(tuple(int(d) for d in a.shape) for a in avals)
  return tuple(_freeze(t) for t in transforms), dtypes, shapes


def _consumer(id: int, func, frozen, treedef, dtypes, shapes, host_arrays_on) -> Consumer:
  unpacked = tuple((name, dict(params)) for name, params in frozen)
  host_arrays = None if host_arrays_on is None else (
      tuple(ShapedArray(s, d) for s, d in zip(shapes, dtypes)), host_arrays_on)
  return Consumer(id, func, unpacked, treedef, dtypes, shapes, host_arrays)


def take_released() -> list[Consumer]:
  """The consumers whose last `ConsumerRef` went since the previous call: no new
  registration returns them any more, and the caller must `forget` them once no tap for
  them can be pending."""
  if not _released:
    return []
  done = []
  with _lock:
    while _released:
      record = _holds.pop(_released.popleft())
      count = _owners.get(record.id)
      if count is None:  # registered for good meanwhile
        continue
      if count > 1:
        _owners[record.id] = count - 1
        continue
      del _owners[record.id]
      key = _keys.pop(record.id)
      if _by_key.get(key) is record:
        del _by_key[key]
      done.append(record)
  return done


def forget(records: Sequence[Consumer]) -> None:
  """Drops released consumers for good: their ids are never used again."""
  with _lock:
    for record in records:
      consumers_by_id.pop(record.id, None)
      simple_consumers.pop(record.id, None)


def consumer(consumer_id: int) -> Consumer:
  """The consumer registered under `consumer_id`; KeyError if there is none."""
  return consumers_by_id[consumer_id]


def _after_fork_in_child() -> None:
  _lock._at_fork_reinit()  # a parent thread may have held it at the fork


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_after_fork_in_child)


def live_consumers() -> int:
  """How many consumers are registered (released ones not yet forgotten included)."""
  return len(consumers_by_id)
