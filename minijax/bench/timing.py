"""Side-by-side timing: interleaved samples, medians and quartiles, and a plain table.

Every benchmark measures its contenders in rounds: each round takes one sample of each
contender in turn, so slow drifts of the machine (another process, frequency changes)
touch all of them alike and the ratios stay meaningful.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Callable, Sequence


def percentile(values: Sequence[float], q: float) -> float:
  ordered = sorted(values)
  if not ordered:
    return float("nan")
  k = (len(ordered) - 1) * q
  lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
  return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


class Stats:
  __slots__ = ("samples",)

  def __init__(self, samples):
    self.samples = list(samples)

  median = property(lambda self: statistics.median(self.samples) if self.samples else float("nan"))
  p25 = property(lambda self: percentile(self.samples, 0.25))
  p75 = property(lambda self: percentile(self.samples, 0.75))

  def as_dict(self) -> dict:
    return {"median": self.median, "p25": self.p25, "p75": self.p75, "n": len(self.samples)}


def per_call_seconds(fn: Callable[[], object], number: int,
                     clock: Callable[[], float] = time.perf_counter) -> float:
  """Seconds per call of `fn` over `number` calls, by `clock` (`time.thread_time` measures
  the calling thread's CPU time: what the calls cost the dispatching thread, whatever else
  the machine runs meanwhile)."""
  start = clock()
  for _ in range(number):
    fn()
  return (clock() - start) / number


def interleaved(contenders: dict[str, Callable[[], float]], rounds: int,
                progress: str | None = None) -> dict[str, Stats]:
  """`contenders` map a name to a function returning one sample; returns stats per name."""
  samples: dict[str, list[float]] = {name: [] for name in contenders}
  for r in range(rounds):
    if progress:
      print(f"\r{progress}: round {r + 1}/{rounds}", end="", file=sys.stderr, flush=True)
    for name, sample in contenders.items():
      samples[name].append(sample())
  if progress:
    print(file=sys.stderr)
  return {name: Stats(s) for name, s in samples.items()}


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
  cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
  widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
  lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)),
           "  ".join("-" * w for w in widths)]
  lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells[1:]]
  return "\n".join(lines)


def fmt(stats: Stats, scale: float = 1e6, digits: int = 1) -> str:
  return f"{stats.median * scale:.{digits}f} [{stats.p25 * scale:.{digits}f}-{stats.p75 * scale:.{digits}f}]"
