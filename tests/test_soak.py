"""A soak and fault test: many threads dispatch tapped calls on four devices while the
receivers are stopped and restarted, tap functions raise and barriers run concurrently;
then every tap must have arrived exactly once, every exception be counted, no thread have
died, and memory (Python's allocated blocks, live tap consumers) be flat from one round to
the next.

It runs for `--soak-seconds` (4 s by default, so that CI stays short; run it longer
locally, e.g. `python -m pytest tests/test_soak.py --soak-seconds 300`), in a fresh
interpreter with four CPU devices, in rounds: each ends with the dispatching threads
joined, a barrier and a garbage collection, then the checks.
"""
from __future__ import annotations

import json
import textwrap

from tests.conftest import run_python

SOAK = """
import collections, gc, json, logging, random, sys, threading, time
import numpy as np
import minijax, minijax.numpy as jnp
from minijax.experimental import host_callback as hcb
from minijax.runtime import taps
from minijax.runtime.taps import receiver, registry

SECONDS, ROUNDS, THREADS = float(sys.argv[1]), 4, 6
CHUNK = 1 << 16
lock = threading.Lock()
# The taps that arrived, counted per (thread, i) in arrays of CHUNK counts, which cost the
# Python allocator (whose blocks the test counts) nothing per call.
delivered = [[] for _ in range(THREADS)]

def tap_for(thread):
  chunks = delivered[thread]
  def tap(arg, transforms):
    i = int(arg[0])
    chunk, j = divmod(i, CHUNK)
    with lock:
      while len(chunks) <= chunk:
        chunks.append(np.zeros(CHUNK, np.int16))
      chunks[chunk][j] += 1
    if i % 7 == 0:
      raise ValueError(f"tap fault {thread}/{i}")
  return tap

def make(thread):
  ordered = thread % 2 == 0
  tap = tap_for(thread)
  return minijax.jit(lambda i: hcb.id_tap(tap, i * jnp.ones(4, jnp.int32), ordered=ordered),
                     device=thread % 4)

functions = [make(t) for t in range(THREADS)]
dispatched = [0] * THREADS  # thread t dispatched i = 0, ..., dispatched[t] - 1
barrier_faults = [0]

def worker(thread, stop):
  f = functions[thread]
  while not stop.is_set():
    i = dispatched[thread]
    g = make(thread) if i % 100 == 99 else f  # a short-lived function now and then
    g(i)
    dispatched[thread] = i + 1

def all_once() -> bool:
  for n, chunks in zip(dispatched, delivered):
    counts = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    if n > len(counts) or (counts[:n] != 1).any() or counts[n:].any():
      return False
  return True

def stopper(stop):
  while not stop.is_set():
    time.sleep(random.uniform(0, 0.02))
    taps.stop_outfeed_receiver()

def barriers(stop):
  while not stop.is_set():
    time.sleep(random.uniform(0, 0.01))
    try:
      hcb.barrier_wait()
    except taps.TapFunctionException:
      barrier_faults[0] += 1

logging.getLogger("minijax.taps").setLevel(logging.CRITICAL + 1)  # the faults are expected
errors = []  # exceptions that ended a thread of the test
threading.excepthook = lambda args: errors.append(f"{args.exc_type.__name__}: {args.exc_value}")
report = []
for round in range(ROUNDS):
  stop = threading.Event()
  threads = [threading.Thread(target=worker, args=(t, stop)) for t in range(THREADS)]
  threads += [threading.Thread(target=stopper, args=(stop,)),
              threading.Thread(target=barriers, args=(stop,))]
  for t in threads:
    t.start()
  time.sleep(SECONDS / ROUNDS)
  stop.set()
  for t in threads:
    t.join()
  try:
    hcb.barrier_wait()
  except taps.TapFunctionException:
    pass
  gc.collect()
  hcb.barrier_wait()
  exceptions = sum(s.exceptions for s in taps.tap_stats().values())
  report.append(dict(
      calls=sum(dispatched), all_once=all_once(),
      faults_counted=exceptions == sum((n + 6) // 7 for n in dispatched),
      blocks=sys.getallocatedblocks(), consumers=registry.live_consumers(),
      retiring=receiver.retiring_consumers(), devices=len(minijax.devices()),
      errors=list(errors)))
print(json.dumps(report))
"""


def test_soak_threads_stops_faults_and_barriers_on_four_devices(soak_seconds):
  # A queue of 8 KB holds about 64 taps: devices wait for room all the time, while the
  # receivers are stopped under them (this deadlocked before stops left queues open).
  proc = run_python(textwrap.dedent(SOAK).replace("sys.argv[1]", repr(soak_seconds)),
                    env={"MINIJAX_NUM_CPU_DEVICES": "4", "MINIJAX_TAP_QUEUE_BYTES": "8192"},
                    timeout=120 + 2 * soak_seconds)
  assert proc.returncode == 0, proc.stderr[-3000:]
  rounds = json.loads(proc.stdout.strip().splitlines()[-1])
  for r in rounds:
    assert r["devices"] == 4 and r["all_once"] and r["faults_counted"], rounds
    assert r["errors"] == [], rounds
    assert r["retiring"] == 0, rounds
  assert rounds[-1]["calls"] > rounds[0]["calls"] > 0
  # Flat: after the first round (which warms caches), what is left after each round stays
  # within a small allowance, however many calls were made in between.
  assert rounds[-1]["consumers"] == rounds[0]["consumers"], rounds
  calls = rounds[-1]["calls"] - rounds[1]["calls"]
  assert rounds[-1]["blocks"] - rounds[1]["blocks"] < 5_000 + calls // 10, rounds
