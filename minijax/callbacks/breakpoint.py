"""`debug.breakpoint`: stop a computation where it runs and look at its values (JAX's jdb).

    @minijax.jit
    def f(x):
      y = jnp.sin(x)
      minijax.debug.breakpoint()   # (jdb) p y   -> the value y has when f runs
      return y * 2

When it is traced, a breakpoint records the user's Python frames above it (minijax's own
frames are left out unless `filter_frames=False`; `num_frames` keeps the innermost few) with
their local variables.  The leaves of those locals that are traced values become the operands
of one `debug.callback`; every other value is kept as it was.  When the computation reaches
the call, the frames are rebuilt with the values the operands have, and a debugger is handed
them: the one registered with the highest priority (`register_debugger`), or the one named by
`backend`; the command-line debugger `cli` is always there.

The call runs during the computation (a host call, as `debug.log`'s), so the computation
waits at the prompt, as JAX's does.  `ordered=True` keeps breakpoints and other ordered
debug calls in program order; `token=` (a pytree of arrays) runs it once the token is
computed and returns the token, which orders what uses it after the breakpoint (a
`pure_callback` that passes it through: drop the result and the breakpoint is dropped too).
Extra keyword arguments go to the debugger (`stdin=`, `stdout=` for `cli`).  Quitting (`q`,
or the end of `stdin`) raises `SystemExit` from the call that ran the computation.
"""
from __future__ import annotations

import cmd
import dataclasses
import inspect
import pprint
import sys
import threading
import traceback
import warnings
from typing import IO, Any, Callable

from minijax import lax
from minijax.callbacks.debug import debug_callback
from minijax.callbacks.pure import pure_callback
from minijax.core.trace import Tracer
from minijax.core.traceback_util import is_internal_frame
from minijax.tree_util import internal as tree_util

__all__ = ["breakpoint", "register_debugger", "get_debugger", "DebuggerFrame", "CliDebugger"]


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
  """One Python frame as the debugger shows it: where it is, its source around the line
  (`source[offset]` is the line; offset None when the source cannot be read) and its
  variables (traced values replaced by the values they had when the computation ran)."""
  filename: str
  locals: dict[str, Any]
  globals: dict[str, Any]
  code_context: list[str] | None
  source: list[str]
  lineno: int
  offset: int | None

  @classmethod
  def from_frameinfo(cls, info: inspect.FrameInfo) -> DebuggerFrame:
    try:
      lines, start = inspect.getsourcelines(info.frame)
      source = "".join(lines).split("\n")
      offset = info.lineno - max(start, 1)  # start is 0 for a module's own frame
      if not 0 <= offset < len(source):  # (code made by exec or eval)
        source, offset = [], None
    except (OSError, TypeError):
      source, offset = [], None
    return cls(info.filename, dict(info.frame.f_locals), {}, info.code_context, source,
               info.lineno, offset)


# ----------------------------------------------------------------------------- debuggers

Debugger = Callable[..., None]  # debugger(frames, thread_id, **kwargs)
_debuggers: dict[str, tuple[int, Debugger]] = {}


def register_debugger(name: str, debugger: Debugger, priority: int) -> None:
  """Makes `debugger(frames, thread_id, **kwargs)` available to breakpoints, as `backend=name`
  or, when no backend is named, if its priority is the highest."""
  if name in _debuggers:
    raise ValueError(f'Debugger with name "{name}" already registered.')
  _debuggers[name] = (priority, debugger)


def get_debugger(backend: str | None = None) -> Debugger:
  """The debugger registered as `backend`, else the one of the highest priority."""
  if backend is not None and backend in _debuggers:
    return _debuggers[backend][1]
  if not _debuggers:
    raise ValueError("No debuggers registered!")
  return max(_debuggers.values(), key=lambda entry: entry[0])[1]


class CliDebugger(cmd.Cmd):
  """The command-line debugger: a `(jdb)` prompt over the frames of a breakpoint, innermost
  first.  Commands: p/pp EXPR, u(p), d(own), l(ist), w(here)/bt, c(ont(inue)), q(uit)/exit;
  any other line is evaluated in the current frame and its repr printed."""
  prompt = "(jdb) "
  intro = "Entering jdb:"

  def __init__(self, frames: list[DebuggerFrame], thread_id: int | None,
               stdin: IO[str] | None = None, stdout: IO[str] | None = None,
               completekey: str = "tab"):
    super().__init__(completekey=completekey, stdin=stdin, stdout=stdout)
    self.use_rawinput = stdin is None
    self.frames, self.thread_id, self.frame_index = frames, thread_id, 0

  def _say(self, text: str) -> None:
    print(text, file=self.stdout)

  def _evaluate(self, expr: str):
    frame = self.frames[self.frame_index]
    return eval(expr, {}, {**frame.globals, **frame.locals})  # noqa: S307 - the user's own

  def _show(self, expr: str, fmt: Callable[[Any], str]) -> None:
    try:
      self._say(fmt(self._evaluate(expr)))
    except Exception:  # noqa: BLE001 - shown at the prompt, as pdb does
      self._say("*** " + traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip())

  def default(self, line):
    self._show(line, repr)

  def do_p(self, arg):
    """p expression: print the value of the expression in the current frame."""
    self._show(arg, repr)

  def do_pp(self, arg):
    """pp expression: pretty-print the value of the expression in the current frame."""
    self._show(arg, pprint.pformat)

  def do_up(self, arg, /):
    """u(p): move to the frame that called this one."""
    if self.frame_index == len(self.frames) - 1:
      self._say("At topmost frame.")
    else:
      self.frame_index += 1
    self._context()
  do_u = do_up

  def do_down(self, arg, /):
    """d(own): move to the frame this one called."""
    if self.frame_index == 0:
      self._say("At bottommost frame.")
    else:
      self.frame_index -= 1
    self._context()
  do_d = do_down

  def do_list(self, arg):
    """l(ist): show the source around the current line."""
    self._context(lines=5)
  do_l = do_list

  def do_where(self, arg):
    """w(here): the stack, the innermost frame last (bt is the same)."""
    text = ["Traceback:"]
    for frame in reversed(self.frames):
      text.append(f'  File "{frame.filename}", line {frame.lineno}')
      text.append("    <no source>" if frame.offset is None
                  else "    " + frame.source[frame.offset].strip())
    self._say("\n".join(text))
  do_w = do_bt = do_where

  def do_continue(self, arg):
    """c(ont(inue)): leave the debugger; the computation goes on."""
    return True
  do_c = do_cont = do_continue

  def do_quit(self, arg):
    """q(uit) or exit: end the program (SystemExit)."""
    sys.exit(0)
  do_q = do_exit = do_EOF = do_quit

  def _context(self, lines: int = 2) -> None:
    frame = self.frames[self.frame_index]
    text = [f"> {frame.filename}({frame.lineno})"]
    if frame.offset is not None:
      first, last = frame.offset - 1 - lines, frame.offset + lines
      text += [("->  " if i == frame.offset else "    ") + line
               for i, line in enumerate(frame.source) if first <= i <= last]
    self._say("\n".join(text))

  def run(self) -> None:
    while True:
      try:
        self.cmdloop()
        return
      except KeyboardInterrupt:
        self._say("--KeyboardInterrupt--")


def _run_cli(frames: list[DebuggerFrame], thread_id: int | None, **kwargs: Any) -> None:
  CliDebugger(frames, thread_id, **kwargs).run()


register_debugger("cli", _run_cli, -1)

# ----------------------------------------------------------------------------- breakpoint


@dataclasses.dataclass(frozen=True)
class _FrameValues:
  """The frames of a breakpoint with its traced leaves taken out: `rebuild(values)` puts
  the values they have when the computation runs back in."""
  frames: list[DebuggerFrame]
  slots: list[tuple[int, str, Any, list[Any], list[int]]]  # frame, name, treedef, leaves, traced

  @classmethod
  def split(cls, frames: list[DebuggerFrame]) -> tuple[_FrameValues, list[Tracer]]:
    slots, traced = [], []
    for index, frame in enumerate(frames):
      for name, value in frame.locals.items():
        try:
          with warnings.catch_warnings():  # (a generator in some frame is a leaf: fine)
            warnings.simplefilter("ignore")
            leaves, treedef = tree_util.tree_flatten(value)
        except Exception:  # noqa: BLE001 - a value that cannot be flattened is kept whole
          continue
        positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]
        if positions:
          slots.append((index, name, treedef, leaves, positions))
          traced += [leaves[i] for i in positions]
    return cls(frames, slots), traced

  def rebuild(self, values) -> list[DebuggerFrame]:
    frames = [dataclasses.replace(f, locals=dict(f.locals)) for f in self.frames]
    values = iter(values)
    for index, name, treedef, leaves, positions in self.slots:
      leaves = list(leaves)
      for i in positions:
        leaves[i] = next(values)
      frames[index].locals[name] = treedef.unflatten(leaves)
    return frames


_debugger_lock = threading.Lock()  # one prompt at a time when several devices stop


class _Stop:
  """The host function of one breakpoint: rebuilds its frames and runs the debugger.  It
  runs during the computation (see `callbacks.debug._synchronous`)."""
  runs_during_computation = True
  __name__ = "breakpoint"

  def __init__(self, frames: _FrameValues, backend: str | None, kwargs: dict):
    self.frames, self.backend, self.kwargs = frames, backend, kwargs

  def __call__(self, *values) -> None:
    thread = threading.current_thread()
    thread_id = None if thread is threading.main_thread() else threading.get_ident()
    debugger = get_debugger(self.backend)
    with _debugger_lock:
      debugger(self.frames.rebuild(values), thread_id, **self.kwargs)


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any):
  """Stops the computation here and opens a debugger over the frames above this call, with
  the values they have when the computation runs (see the module docstring).  Returns
  `token` (None without one)."""
  if token is not None and ordered:
    raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
  infos = inspect.stack()[1:]
  if filter_frames:  # minijax's frames, and Python's own machinery (runpy, importlib)
    infos = [info for info in infos if not is_internal_frame(info.frame)
             and not info.filename.startswith("<frozen ")]
  if num_frames is not None:
    infos = infos[:num_frames]
  frames, traced = _FrameValues.split([DebuggerFrame.from_frameinfo(i) for i in infos])
  del infos  # (frame objects keep every local of the stack alive)
  stop = _Stop(frames, backend, kwargs)
  if token is None:
    debug_callback(stop, *traced, ordered=ordered)
    return None
  token, traced = lax.stop_gradient((token, traced))

  def stop_then_pass(token, *values):
    stop(*values)
    return token
  return pure_callback(stop_then_pass, token, token, *traced)
