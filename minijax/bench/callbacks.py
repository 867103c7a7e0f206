"""What a host callback costs, measured side by side for minijax's taps and JAX's callbacks.

Every contender is a *mechanism*: a way to send the value `x` of a loop's carry to a Python
function on the host from inside compiled code (`tap(x)` returns something that depends on
the host call, so no compiler may drop it).  A library adapter (`MinijaxLib`, `JaxLib`) gives
each mechanism the same vocabulary (jit, fori_loop, vmap, grad, device_put, wait), so every
measurement is one function written once and run for all contenders:

  * `loop`: `fori_loop(0, iterations, lambda i, x: tap(x) + 1, x)`, timed from the call until
    the result is ready *and* every host call has run (`minijax.effects_barrier`,
    `jax.effects_barrier`), so asynchronous delivery is not free.  The per-tap cost
    is the difference to the same loop without a tap, paired round by round.  The payload
    `x` is a float32 scalar, a float32 vector of a given size, or ("scalar2") a tuple of
    two scalars that each callback takes as two operands (`id_tap` as one tuple);
  * the same loop under `vmap` (batch 8) and under `grad`, with the host calls per iteration
    counted in the tap function, or the error the mechanism raises;
  * `dispatch`: µs per call of `jit(lambda x: tap(x) + 1)` on a device-resident scalar, over
    a burst of calls that ends when the last result and its host calls are done;
  * `barrier`: an idle `effects_barrier`.

The contenders are minijax's taps (`id_tap`, under both device-side mechanisms), minijax's
JAX-style callbacks (`debug.callback`, `io_callback`, `pure_callback`) and JAX's same
callbacks, each written the same way for both libraries.

Samples are taken with `timing.interleaved` (one sample of each contender per round), and a
row reports the median with the 25th-75th percentiles.  The functions here return plain row
dicts; `minijax.bench.__main__` runs them, prints tables and writes JSON / PNG.  JAX is
imported only when `JaxLib` is built, and only if it is installed.

A row (the JSON schema; every key is always present, None when it does not apply):
  measure          loop | loop_device | loop_return | throughput | vmap | grad | dispatch |
                   barrier
  mechanism        "no tap", "minijax native ordered", ..., "jax.pure_callback"
  library          minijax | jax
  payload          "scalar", "2 scalars" (two scalar operands), "1 MiB", ... (None for
                   the barrier)
  median_us, p25_us, p75_us   µs per tap (loop, loop_device), per iteration (vmap, grad),
                   per call (loop_return, dispatch, barrier); the "no tap" baselines of loop,
                   vmap and grad hold the loop's µs per iteration
  ratio_vs_native  median_us / minijax native ordered's, same measure and payload
  ratio_vs_untapped  dispatch rows: the median over rounds of this contender's time over
                   its library's untapped call, both measured back to back in the round
  calls_per_iter   host calls counted per loop iteration (loop, vmap, grad)
  value, unit      throughput rows: taps/s
  samples          number of samples (rounds)
  available        False when the mechanism cannot run there; `note` says why
  note             the error's short reason, or remarks
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import statistics
import time
from typing import Any, Callable

import numpy as np

from minijax.bench.timing import Stats, interleaved

# ----------------------------------------------------------------------------- rows

ROW_KEYS = ("measure", "mechanism", "library", "payload", "median_us", "p25_us", "p75_us",
            "ratio_vs_native", "ratio_vs_untapped", "calls_per_iter", "value", "unit",
            "samples", "available", "note")

NATIVE = "minijax native ordered"
DEBUG = "minijax debug.callback"
PURE = "minijax pure_callback"
JAX_DEBUG = "jax.debug.callback"
JAX_PURE = "jax.pure_callback"


def row(measure: str, mechanism: str, library: str, payload: str | None, *,
        stats: Stats | None = None, scale: float = 1e6, **extra) -> dict:
  """One result row with every key of `ROW_KEYS` present (None when not applicable)."""
  r = dict.fromkeys(ROW_KEYS)
  r.update(measure=measure, mechanism=mechanism, library=library, payload=payload,
           available=True, note="")
  if stats is not None and stats.samples:
    r.update(median_us=stats.median * scale, p25_us=stats.p25 * scale,
             p75_us=stats.p75 * scale, samples=len(stats.samples))
  r.update(extra)
  return r


def short_reason(e: BaseException, limit: int = 100) -> str:
  """`TypeName: first clause of the message`, short enough for a table cell."""
  msg = " ".join(str(e).split())
  for stop in (". ", "; ", ": "):
    cut = msg.find(stop, 12)
    if cut > 0:
      msg = msg[:cut + (stop == ". ")]  # a sentence keeps its full stop
  text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
  return text if len(text) <= limit else text[:limit - 3] + "..."


# ----------------------------------------------------------------------------- tap counting

class Counter:
  """A near no-op host function that counts its calls: `counter.tap` appends to a list
  (atomic under the GIL, so several receiver threads may call it) and returns `ret`
  (JAX's pure_callback needs a value).  It costs about 0.1 µs a call, a plain function
  with no keyword arguments, so minijax does not pass it a `device`."""

  def __init__(self, ret: Any = None):
    self._calls: list = []
    append = self._calls.append

    def tap(*args):
      append(None)
      return ret

    self.tap = tap

  @property
  def n(self) -> int:
    return len(self._calls)

  def reset(self) -> None:
    self._calls.clear()


# ----------------------------------------------------------------------------- libraries

class MinijaxLib:
  name = "minijax"

  def __init__(self):
    import minijax
    from minijax import lax
    from minijax.experimental import host_callback as hcb
    from minijax.experimental import io_callback
    from minijax.lax.control_flow import fori_loop
    self.mj, self.lax, self.hcb, self._fori = minijax, lax, hcb, fori_loop
    self.jax, self.io_callback = minijax, io_callback  # JAX's names, for the shared adapters

  def devices(self):
    return self.mj.devices()

  def jit(self, f, device=None):
    return self.mj.jit(f, device=device)

  def fori_loop(self, n, body, x):
    return self._fori(0, n, body, x)

  def add1(self, x):
    return self.lax.add(x, 1.0)

  def vmap(self, f):
    if not hasattr(self.mj, "vmap"):
      raise NotImplementedError("minijax.vmap is not available yet")
    return self.mj.vmap(f)

  def grad(self, f):
    if not hasattr(self.mj, "grad"):
      raise NotImplementedError("minijax.grad is not available yet")
    return self.mj.grad(f)

  def put(self, x, device):
    return self.mj.device_put(x, device)

  def block(self, out):
    out.block_until_ready()

  def barrier(self):
    self.mj.effects_barrier()

  @contextlib.contextmanager
  def mechanism(self, which: str | None):
    """Sets `tap_mechanism` while a contender traces and compiles (lowering reads it)."""
    previous = self.mj.config.tap_mechanism
    if which:
      self.mj.config.update("tap_mechanism", which)
    try:
      yield
    finally:
      if which:
        self.mj.config.update("tap_mechanism", previous)


class JaxLib:
  name = "jax"

  def __init__(self):
    import jax  # only here: the benchmark works without jax
    from jax.experimental import io_callback
    self.jax, self.io_callback = jax, io_callback

  def devices(self):
    return self.jax.devices()

  def jit(self, f, device=None):
    return self.jax.jit(f)  # placement follows the committed argument

  def fori_loop(self, n, body, x):
    return self.jax.lax.fori_loop(0, n, body, x)

  def add1(self, x):
    return x + np.float32(1.0)

  def vmap(self, f):
    return self.jax.vmap(f)

  def grad(self, f):
    return self.jax.grad(f)

  def put(self, x, device):
    return self.jax.device_put(x, device)

  def block(self, out):
    out.block_until_ready()

  def barrier(self):
    self.jax.effects_barrier()

  @contextlib.contextmanager
  def mechanism(self, which):
    yield


def jax_available() -> bool:
  try:
    import jax  # noqa: F401
  except ImportError:
    return False
  return True


# ----------------------------------------------------------------------------- mechanisms

@dataclasses.dataclass
class Mechanism:
  """A contender: `make_tap(counter)` returns `tap(x)` for use inside traced code."""
  key: str
  name: str
  library: str
  make_tap: Callable[[Any, Counter], Callable] | None  # (lib, counter) -> tap; None: no tap
  config: str | None = None  # minijax tap_mechanism while compiling
  counter_ret: Callable[[], Any] | None = None

  @property
  def is_baseline(self) -> bool:
    return self.make_tap is None


def _mj_tap(ordered: bool):
  def make(lib, counter):
    return lambda x: lib.hcb.id_tap(counter.tap, x, ordered=ordered)
  return make


# JAX's callback API, written once for both libraries (`lib.jax` is `jax` or `minijax`).
# A payload of several operands (a tuple `x`, see `Scalars`) is passed as that many
# arguments; an `id_tap` taps the tuple.

def _operands(x) -> tuple:
  return x if isinstance(x, tuple) else (x,)


def _debug(lib, counter):
  def tap(x):
    lib.jax.debug.callback(counter.tap, *_operands(x))
    return x
  return tap


def _io(ordered: bool):
  def make(lib, counter):
    def tap(x):
      lib.io_callback(counter.tap, None, *_operands(x), ordered=ordered)  # never dropped
      return x
    return tap
  return make


def _pure(lib, counter):
  def tap(x):
    # pure_callback may be dropped when unused: its (zero) result is added to x.
    zero = lib.jax.pure_callback(counter.tap, lib.jax.ShapeDtypeStruct((), np.float32),
                                 *_operands(x))
    return x + zero if not isinstance(x, tuple) else tuple(a + zero for a in x)
  return tap


_zero = lambda: np.zeros((), np.float32)  # noqa: E731  (what pure_callback's counter returns)


MECHANISMS = [
    Mechanism("none", "no tap", "minijax", None),
    Mechanism("native", NATIVE, "minijax", _mj_tap(True), "native"),
    Mechanism("native-unordered", "minijax native unordered", "minijax", _mj_tap(False),
              "native"),
    Mechanism("callback", "minijax callback", "minijax", _mj_tap(True), "callback"),
    Mechanism("debug", DEBUG, "minijax", _debug, "native"),
    Mechanism("io-ordered", "minijax io_callback ordered", "minijax", _io(True), "native"),
    Mechanism("io-unordered", "minijax io_callback unordered", "minijax", _io(False), "native"),
    Mechanism("pure", PURE, "minijax", _pure, "native", counter_ret=_zero),
    Mechanism("pure-callback", "minijax pure_callback (jaxlib callback)", "minijax", _pure,
              "callback", counter_ret=_zero),
    Mechanism("jax-none", "no tap (jax)", "jax", None),
    Mechanism("jax-debug", JAX_DEBUG, "jax", _debug),
    Mechanism("jax-io-ordered", "jax io_callback ordered", "jax", _io(True)),
    Mechanism("jax-io-unordered", "jax io_callback unordered", "jax", _io(False)),
    Mechanism("jax-pure", JAX_PURE, "jax", _pure, counter_ret=_zero),
]
MECHANISM_KEYS = [m.key for m in MECHANISMS]
BASELINE = {"minijax": "none", "jax": "jax-none"}


def select_mechanisms(keys: list[str] | None, with_jax: bool) -> list[Mechanism]:
  """The chosen mechanisms plus the no-tap baseline of every library they use."""
  chosen = [m for m in MECHANISMS if keys is None or m.key in keys]
  if not with_jax:
    chosen = [m for m in chosen if m.library != "jax"]
  libs = {m.library for m in chosen}
  keep = {m.key for m in chosen} | {BASELINE[lib] for lib in libs}
  return [m for m in MECHANISMS if m.key in keep]


# ----------------------------------------------------------------------------- payloads

class Scalars(int):
  """A payload of `operands` float32 scalars, each its own operand of the host call (its
  value as an int: their bytes)."""
  operands: int

  def __new__(cls, operands: int):
    self = super().__new__(cls, 4 * operands)
    self.operands = operands
    return self


def payload_array(nbytes: int) -> np.ndarray | tuple:
  """A float32 payload: a scalar for 4 bytes or fewer, else a vector of `nbytes` bytes; a
  tuple of scalars for `Scalars`."""
  if isinstance(nbytes, Scalars):
    return tuple(np.float32(k) for k in range(nbytes.operands))
  if nbytes <= 4:
    return np.float32(0.0)
  return np.zeros(nbytes // 4, np.float32)


def payload_label(nbytes: int) -> str:
  if isinstance(nbytes, Scalars):
    return f"{nbytes.operands} scalars"
  if nbytes <= 4:
    return "scalar"
  for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
    if nbytes >= size and nbytes % size == 0:
      return f"{nbytes // size} {unit}"
  return f"{nbytes} B"


def parse_payload(text: str) -> int:
  t = text.strip().replace(" ", "").lower()
  if t in ("scalar", "0", "4"):
    return 4
  if t.startswith("scalar") and t[6:].isdigit():  # "scalar2": two scalar operands
    return Scalars(int(t[6:]))
  for unit, size in (("gib", 1 << 30), ("mib", 1 << 20), ("kib", 1 << 10), ("gb", 10**9),
                     ("mb", 10**6), ("kb", 10**3), ("b", 1)):
    if t.endswith(unit):
      return int(float(t[:-len(unit)]) * size)
  return int(t)


# ----------------------------------------------------------------------------- contenders

class Contender:
  """One mechanism made runnable for one measurement: compiled once on every device, with
  its counter.  Every run happens under the mechanism's config, because minijax keys jit's
  caches on it (a call under another mechanism would compile again, for that mechanism).
  `error` holds the short reason when it cannot run."""

  def __init__(self, mech: Mechanism, lib, build: Callable[[Callable], Callable],
               inputs: Callable[[], np.ndarray], devices: list):
    self.mech, self.lib = mech, lib
    self.counter = Counter(mech.counter_ret() if mech.counter_ret else None)
    self.error: str | None = None
    self.fns, self.xs = [], []
    try:
      tap = mech.make_tap(lib, self.counter) if mech.make_tap else (lambda x: x)
      with lib.mechanism(mech.config):
        for d in devices:
          self.fns.append(lib.jit(build(tap), device=d))
          self.xs.append(lib.put(inputs(), d))
        self.run()  # traces, lowers and compiles under the mechanism's config
    except Exception as e:  # noqa: BLE001 - the reason goes into the table
      self.error = short_reason(e)
      with contextlib.suppress(Exception):
        lib.barrier()

  def run(self) -> tuple[float, float, float]:
    """Runs once on every device; returns the seconds until the calls returned, until the
    results were ready, and until every host call had also run."""
    with self.lib.mechanism(self.mech.config):
      t0 = time.perf_counter()
      outs = [f(x) for f, x in zip(self.fns, self.xs)]
      t1 = time.perf_counter()
      for o in outs:
        for a in _operands(o):
          self.lib.block(a)
      t2 = time.perf_counter()
      self.lib.barrier()
      t3 = time.perf_counter()
    return t1 - t0, t2 - t0, t3 - t0


def make_libs(mechs: list[Mechanism]) -> dict[str, Any]:
  libs = {}
  for m in mechs:
    if m.library not in libs:
      libs[m.library] = MinijaxLib() if m.library == "minijax" else JaxLib()
  return libs


def _devices(lib, n: int) -> list:
  devs = lib.devices()
  if len(devs) < n:
    raise RuntimeError(f"{lib.name} has {len(devs)} devices, {n} were asked for")
  return devs[:n]


def _paired_per_tap(tapped: list, base: list, taps: float, part: int) -> Stats:
  """Per-tap seconds from round-paired samples: (tapped - baseline) / taps."""
  return Stats([(t[part] - b[part]) / taps for t, b in zip(tapped, base)])


def _ratios(rows: list[dict]) -> None:
  """Fills `ratio_vs_native` against the minijax native ordered row of the same measure
  and payload."""
  ref = {(r["measure"], r["payload"]): r["median_us"] for r in rows
         if r["mechanism"] == NATIVE and r["median_us"]}
  for r in rows:
    base = ref.get((r["measure"], r["payload"]))
    if r["mechanism"].startswith("no tap"):
      continue
    if base and r["median_us"] is not None and r["mechanism"] != NATIVE:
      r["ratio_vs_native"] = r["median_us"] / base
    elif base and r["mechanism"] == NATIVE:
      r["ratio_vs_native"] = 1.0


# ----------------------------------------------------------------------------- measurements

def _add1(lib, v):
  """`v + 1`, for each scalar of a `Scalars` payload."""
  return tuple(map(lib.add1, v)) if isinstance(v, tuple) else lib.add1(v)


def measure_loop(mechs, libs, *, iterations: int, payloads: list[int], rounds: int,
                 devices: int, transform: str | None = None, batch: int = 8) -> list[dict]:
  """The tapped fori_loop, plain (one row set per payload) or under vmap / grad (scalar)."""
  rows = []
  if transform is not None:
    payloads = [4]
  for nbytes in payloads:
    label = payload_label(nbytes)
    measure = "loop" if transform is None else transform
    contenders = {}
    for m in mechs:
      lib = libs[m.library]

      def build(tap, lib=lib):
        def loop(x):
          return lib.fori_loop(iterations, lambda i, v: _add1(lib, tap(v)), x)
        if transform == "vmap":
          return lib.vmap(loop)
        if transform == "grad":
          return lib.grad(loop)
        return loop

      if transform == "vmap":
        inputs = lambda: np.zeros(batch, np.float32)  # noqa: E731
      else:
        inputs = lambda nbytes=nbytes: payload_array(nbytes)  # noqa: E731
      try:
        devs = _devices(lib, devices)
      except RuntimeError as e:
        rows.append(row(measure, m.name, m.library, label, available=False,
                        note=short_reason(e)))
        continue
      c = Contender(m, lib, build, inputs, devs)
      calls = c.counter.n / (iterations * devices)
      c.counter.reset()
      if c.error:
        rows.append(row(measure, m.name, m.library, label, available=False, note=c.error))
      else:
        contenders[m.key] = c
        c.calls_per_iter = calls

    what = f"{measure} {label}" + (f" x{batch}" if transform == "vmap" else "")
    stats = interleaved({k: settled(c.run) for k, c in contenders.items()}, rounds, what)
    for m in mechs:
      if m.key not in contenders:
        continue
      c, samples = contenders[m.key], stats[m.key].samples
      if transform is None:
        total = Stats([s[2] for s in samples]).median
        rows.append(row("loop_return", m.name, m.library, label,
                        stats=Stats([s[0] for s in samples]),
                        note=f"{100 * Stats([s[0] for s in samples]).median / total:.0f}% "
                             f"of {total * 1e3:.1f} ms"))
      if m.is_baseline:
        rows.append(row(measure, m.name, m.library, label,
                        stats=Stats([s[2] / iterations for s in samples]),
                        note="baseline: loop µs per iteration, no tap"))
        continue
      base_key = BASELINE[m.library]
      if base_key not in contenders:
        rows.append(row(measure, m.name, m.library, label, available=False,
                        note="no baseline to subtract"))
        continue
      base = stats[base_key].samples
      taps = iterations * devices
      delivered = c.counter.n
      expected = round(c.calls_per_iter * taps * rounds)
      note = "" if delivered == expected else f"{delivered} of {expected} host calls counted"
      per_tap = _paired_per_tap(samples, base, taps, 2)
      rows.append(row(measure, m.name, m.library, label, stats=per_tap,
                      calls_per_iter=c.calls_per_iter, note=note))
      if transform is None:
        device = _paired_per_tap(samples, base, taps, 1)
        rows.append(row("loop_device", m.name, m.library, label, stats=device,
                        calls_per_iter=c.calls_per_iter))
        rate = Stats([taps / s[2] for s in samples])
        rows.append(row("throughput", m.name, m.library, label,
                        value=rate.median, unit="taps/s",
                        note=f"{rate.median * nbytes / 1e9:.2f} GB/s"
                        if nbytes > 4 and not isinstance(nbytes, Scalars) else ""))
  return rows


def measure_dispatch(mechs, libs, *, calls: int, rounds: int) -> list[dict]:
  """µs per call of a jitted `tap(x) + 1` on a scalar, a burst of `calls` calls ending when
  the last result and all host calls are done."""
  rows, contenders = [], {}
  for m in mechs:
    lib = libs[m.library]
    c = Contender(m, lib, lambda tap, lib=lib: (lambda x: lib.add1(tap(x))),
                  lambda: np.float32(1.0), [lib.devices()[0]])
    if c.error:
      rows.append(row("dispatch", m.name, m.library, "scalar", available=False, note=c.error))
    else:
      contenders[m.key] = c

  def burst(c):
    def sample():
      f, x = c.fns[0], c.xs[0]
      with c.lib.mechanism(c.mech.config):
        t0 = time.perf_counter()
        for _ in range(calls - 1):
          f(x)
        c.lib.block(f(x))
        c.lib.barrier()
        t1 = time.perf_counter()
      return (t1 - t0) / calls
    return sample

  stats = interleaved({k: burst(c) for k, c in contenders.items()}, rounds, "dispatch")
  for m in mechs:
    if m.key in contenders:
      base = stats.get(BASELINE[m.library])
      paired, note = None, ""
      if base is not None and not m.is_baseline:
        # Round by round, as the loop's per-tap cost: this VM's speed drifts by 2x within
        # a run, which a ratio of medians taken over different rounds would pick up.
        paired = statistics.median(t / u for t, u in zip(stats[m.key].samples, base.samples))
        note = f"{paired:.1f}x untapped"
      rows.append(row("dispatch", m.name, m.library, "scalar", stats=stats[m.key],
                      ratio_vs_untapped=paired, note=note))
  return rows


def measure_barrier(libs, *, calls: int, rounds: int) -> list[dict]:
  """An idle barrier: nothing pending (the receivers/effects have been used before)."""
  names = {"minijax": "minijax.effects_barrier", "jax": "jax.effects_barrier"}
  contenders = {}
  for name, lib in libs.items():
    lib.barrier()
    contenders[name] = (lambda lib=lib: _per_call(lib.barrier, calls))
  stats = interleaved(contenders, rounds, "idle barrier")
  return [row("barrier", names[name], name, None, stats=stats[name]) for name in libs]


SETTLE_SECONDS = float(os.environ.get("MINIJAX_BENCH_SETTLE", "0.05"))


def settled(sample: Callable[[], Any]) -> Callable[[], Any]:
  """`sample`, then an untimed pause: worker threads of the previous contender (JAX's
  spin briefly after a callback) go idle before the next contender is timed."""
  def run():
    value = sample()
    if SETTLE_SECONDS:
      time.sleep(SETTLE_SECONDS)
    return value
  return run


def _per_call(fn, number):
  t0 = time.perf_counter()
  for _ in range(number):
    fn()
  return (time.perf_counter() - t0) / number


# ----------------------------------------------------------------------------- the run

MEASURE_GROUPS = ("loop", "vmap", "grad", "dispatch", "barrier")


@dataclasses.dataclass
class Settings:
  iterations: int = 1000
  payloads: tuple = (4, 1 << 20)
  rounds: int = 9
  devices: int = 1
  batch: int = 8
  dispatch_calls: int = 200
  barrier_calls: int = 200
  mechanisms: tuple | None = None
  with_jax: bool = True
  measures: tuple = MEASURE_GROUPS


def run(settings: Settings) -> list[dict]:
  """Every chosen measurement for the chosen mechanisms; a list of rows (see `ROW_KEYS`)."""
  mechs = select_mechanisms(list(settings.mechanisms) if settings.mechanisms else None,
                            settings.with_jax and jax_available())
  libs = make_libs(mechs)
  rows = []
  if "loop" in settings.measures:
    rows += measure_loop(mechs, libs, iterations=settings.iterations,
                         payloads=list(settings.payloads), rounds=settings.rounds,
                         devices=settings.devices)
  for transform in ("vmap", "grad"):
    if transform in settings.measures:
      rows += measure_loop(mechs, libs, iterations=settings.iterations, payloads=[4],
                           rounds=settings.rounds, devices=1, transform=transform,
                           batch=settings.batch)
  if "dispatch" in settings.measures:
    # Three times the rounds: the bursts are short (a few ms) and their paired ratio is the
    # target most exposed to this VM's noise; the extra rounds cost seconds.
    rows += measure_dispatch(mechs, libs, calls=settings.dispatch_calls,
                             rounds=3 * settings.rounds)
  if "barrier" in settings.measures:
    rows += measure_barrier(libs, calls=settings.barrier_calls, rounds=settings.rounds)
  _ratios(rows)
  return rows
