"""Redraws the pictures of docs/handlers.md: runs its python blocks, then saves the
pictures the last section makes.   python docs/pictures/make.py"""
import contextlib
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from tests.test_docs import blocks  # noqa: E402

namespace = {"__name__": "__doc__"}
with open(os.path.join(HERE, "..", "handlers.md")) as f:
  for code, _ in blocks(f.read()):
    with contextlib.redirect_stdout(io.StringIO()):
      exec(code, namespace)
np, picture = namespace["np"], namespace["picture"]
picture(namespace["tapped"], np.arange(3.0, dtype=np.float32)).save(
    os.path.join(HERE, "tapped.svg"))
namespace["before"].save(os.path.join(HERE, "writer_before.svg"))
namespace["after"].save(os.path.join(HERE, "writer_after.svg"))
