"""Builds minijax's one native piece: the tap queue and its XLA FFI handler.

The handler is written against the header-only XLA FFI API that jaxlib ships in
`jaxlib/include`, and the delivery of taps builds numpy arrays through numpy's C API, so
the build needs jaxlib (the same version as at run time), numpy and a C++17 compiler,
nothing else.

If the extension cannot be built, the package still installs and the runtime falls back to
jaxlib's Python callback mechanism.  pip hides a build's output unless it fails, so the
reason is recorded where the package finds it: `_native_build_error.txt`, next to where
the extension would be, which the run-time warning quotes.  Set
`MINIJAX_REQUIRE_NATIVE=1` to make the install fail instead, with the compiler's error in
pip's output.
"""
import os
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE = "minijax.runtime.taps._native"
BUILD_ERROR_FILE = "_native_build_error.txt"


def _jaxlib_include() -> str:
  import jaxlib
  return os.path.join(os.path.dirname(jaxlib.__file__), "include")


class _OptionalBuildExt(build_ext):
  """Lets the install finish without the extension when it cannot be compiled, recording
  why for the run-time warning."""

  def run(self):
    self._inplace = self.inplace  # setuptools clears it while building, then copies
    try:
      super().run()
    except Exception as e:  # setuptools raises several distutils error types here
      self._failed(e)
    else:
      self._record(None)

  def build_extension(self, ext):
    import numpy
    ext.extra_compile_args = ext.extra_compile_args + [
        "-isystem", _jaxlib_include(), "-isystem", numpy.get_include()]
    # The compiler writes its diagnostics to file descriptor 2; keep a copy so that the
    # recorded reason says what the compiler said, not just that it failed.
    with tempfile.TemporaryFile(mode="w+b") as log:
      saved = os.dup(2)
      sys.stderr.flush()
      os.dup2(log.fileno(), 2)
      try:
        super().build_extension(ext)
      except Exception as e:
        os.dup2(saved, 2)
        log.seek(0)
        text = log.read().decode(errors="replace")
        sys.stderr.write(text)
        errors = [line.strip() for line in text.splitlines() if "error" in line.lower()]
        if errors:
          raise type(e)(f"{e}: {errors[0]}") from e
        raise
      finally:
        os.dup2(saved, 2)
        os.close(saved)

  def _error_paths(self) -> list:
    """Where the package looks for the record: beside the extension in the build tree
    (what a wheel holds) and, for an in-place (editable) build, in the source tree."""
    package, _, _ = NATIVE.rpartition(".")
    paths = [os.path.join(self.build_lib, *package.split("."), BUILD_ERROR_FILE)]
    if getattr(self, "_inplace", False):
      build_py = self.get_finalized_command("build_py")
      paths.append(os.path.join(build_py.get_package_dir(package), BUILD_ERROR_FILE))
    return paths

  def _record(self, reason):
    for path in self._error_paths():
      if reason is None:
        if os.path.exists(path):
          os.remove(path)
        continue
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with open(path, "w") as f:
        f.write(reason + "\n")

  def _failed(self, e):
    if os.environ.get("MINIJAX_REQUIRE_NATIVE", "").strip().lower() in ("1", "true", "yes"):
      raise RuntimeError(f"minijax's native tap extension could not be built: {e}") from e
    reason = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    self._record(reason)
    print(f"warning: minijax's native tap extension was not built ({reason}); taps will use "
          "the Python callback mechanism. Set MINIJAX_REQUIRE_NATIVE=1 to make this an "
          "error.", file=sys.stderr)


setup(
    ext_modules=[
        Extension(
            NATIVE,
            sources=["csrc/tap_queue.cc"],
            language="c++",
            extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"],
        )
    ],
    cmdclass={"build_ext": _OptionalBuildExt},
)
