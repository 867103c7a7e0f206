"""The docs run: every ```python block of the walk-throughs in docs/ is executed, in
order, in one namespace of a fresh interpreter (with 2 CPU devices), and the ```text block
that follows a python block is the output that block must print, `...` standing for any
text (as doctest's ELLIPSIS).  A doc whose code or printed output drifts from the library
fails here."""
from __future__ import annotations

import json
import os
import re
import sys

from tests.conftest import ROOT, run_python

DOCS = ["docs/effects.md", "docs/porting.md", "docs/parallel.md", "docs/handlers.md"]
ENV = {"MINIJAX_NUM_CPU_DEVICES": "2", "MINIJAX_TAP_MECHANISM": "native",
       "MINIJAX_TAP_DELIVERY": "auto"}
DEVICES = {"docs/parallel.md": "4"}  # docs that need another device count

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(text: str) -> list[tuple[str, str | None]]:
  """(code, expected output or None) for each python block, in document order."""
  found = [(m.group(1), m.group(2), m.start(), m.end()) for m in _FENCE.finditer(text)]
  out = []
  for i, (lang, body, _, end) in enumerate(found):
    if lang != "python":
      continue
    expected = None
    if i + 1 < len(found) and found[i + 1][0] == "text" and not text[end:found[i + 1][2]].strip():
      expected = found[i + 1][1]
    out.append((body, expected))
  return out


def matches(expected: str, actual: str) -> bool:
  """Line ends are stripped; `...` in `expected` matches any text, across lines too."""
  norm = lambda s: "\n".join(line.rstrip() for line in s.strip("\n").splitlines())  # noqa: E731
  pattern = ".*?".join(re.escape(part) for part in norm(expected).split("..."))
  return re.fullmatch(pattern, norm(actual), re.S) is not None


def execute(path: str) -> list[str]:
  """Runs the python blocks of `path` in one namespace; returns what each printed."""
  import contextlib
  import io
  with open(path) as f:
    code_blocks = [code for code, _ in blocks(f.read())]
  namespace: dict = {"__name__": "__doc__"}
  outputs = []
  for i, code in enumerate(code_blocks):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
      exec(compile(code, f"{path} block {i + 1}", "exec"), namespace)
    outputs.append(buf.getvalue())
  return outputs


def _run_doc(doc: str):
  path = os.path.join(ROOT, doc)
  with open(path) as f:
    expected = [e for _, e in blocks(f.read())]
  env = dict(ENV, MINIJAX_NUM_CPU_DEVICES=DEVICES.get(doc, ENV["MINIJAX_NUM_CPU_DEVICES"]))
  proc = run_python(f"import json, sys\nfrom tests.test_docs import execute\n"
                    f"json.dump(execute({path!r}), sys.stdout)", env=env, timeout=180)
  assert proc.returncode == 0, f"{doc} failed:\n{proc.stderr[-4000:]}"
  return expected, json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_snippet_of_the_effects_walkthrough_runs_and_prints_what_it_shows():
  expected, actual = _run_doc(DOCS[0])
  assert len(expected) == len(actual) and len(actual) >= 8
  assert sum(e is not None for e in expected) >= 6
  for i, (e, a) in enumerate(zip(expected, actual)):
    if e is not None:
      assert matches(e, a), f"{DOCS[0]} block {i + 1} printed:\n{a}\nbut the doc shows:\n{e}"


def test_every_snippet_of_the_porting_guide_runs_and_prints_what_it_shows():
  expected, actual = _run_doc(DOCS[1])
  assert len(expected) == len(actual) >= 3
  assert sum(e is not None for e in expected) >= 3
  for i, (e, a) in enumerate(zip(expected, actual)):
    if e is not None:
      assert matches(e, a), f"{DOCS[1]} block {i + 1} printed:\n{a}\nbut the doc shows:\n{e}"


def test_every_snippet_of_the_parallel_walkthrough_runs_and_prints_what_it_shows():
  doc = "docs/parallel.md"
  expected, actual = _run_doc(doc)
  assert len(expected) == len(actual) and sum(e is not None for e in expected) >= 6
  for i, (e, a) in enumerate(zip(expected, actual)):
    if e is not None:
      assert matches(e, a), f"{doc} block {i + 1} printed:\n{a}\nbut the doc shows:\n{e}"


def test_every_snippet_of_the_handlers_walkthrough_runs_and_prints_what_it_shows():
  doc = "docs/handlers.md"
  expected, actual = _run_doc(doc)
  assert len(expected) == len(actual) and sum(e is not None for e in expected) >= 8
  for i, (e, a) in enumerate(zip(expected, actual)):
    if e is not None:
      assert matches(e, a), f"{doc} block {i + 1} printed:\n{a}\nbut the doc shows:\n{e}"


def test_the_readme_tour_runs():
  _, actual = _run_doc("README.md")
  tour = actual[0]
  assert "what: c" in tour and "mhlo.sine" in tour and "HloModule" in tour


def test_the_doc_runner_matches_ellipses_and_finds_outputs():
  assert matches("a ... d\nlast", "a b c d\nlast  \n")
  assert matches("first\n...\nlast", "first\nx\ny\nlast")
  assert not matches("a\nb", "a\nc")
  text = "x\n```python\nprint(1)\n```\n\n```text\n1\n```\n```python\npass\n```\n"
  assert blocks(text) == [("print(1)\n", "1\n"), ("pass\n", None)]


if __name__ == "__main__":  # python tests/test_docs.py [doc]: show what each block prints
  sys.path.insert(0, ROOT)
  for i, out in enumerate(execute(sys.argv[1] if len(sys.argv) > 1 else DOCS[0])):
    print(f"--- block {i + 1}\n{out}", end="")
