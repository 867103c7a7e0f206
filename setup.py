"""Builds minijax's three native pieces: the tap queue with its XLA FFI handler, the FFI
handler of value-returning host calls (`pure_callback`, `io_callback`), and jit's fast
path for its commonest calls (on Arrays only).

The handlers are written against the header-only XLA FFI API that jaxlib ships in
`jaxlib/include`, and both build numpy arrays through numpy's C API, so the build needs
jaxlib (the same version as at run time), numpy and a C++17 compiler, nothing else.

If an extension cannot be built, the package still installs and minijax falls back to
jaxlib's Python callback mechanism (taps, host calls) or to Python (jit's fast path).  pip hides a build's output unless it fails, so the
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

NATIVE_EXTENSIONS = {  # module: (source, what it is, what minijax does without it)
    "minijax.runtime.taps._native": (
        "csrc/tap_queue.cc", "native tap extension",
        "taps will use the Python callback mechanism"),
    "minijax.runtime.host_calls._native": (
        "csrc/host_call.cc", "native host-call extension",
        "pure_callback and io_callback will use the Python callback mechanism"),
    "minijax.staging._native": (
        "csrc/fast_path.cc", "native jit fast path", "jit will dispatch in Python only"),
}
BUILD_ERROR_FILE = "_native_build_error.txt"


def _jaxlib_include() -> str:
  import jaxlib
  return os.path.join(os.path.dirname(jaxlib.__file__), "include")


class _OptionalBuildExt(build_ext):
  """Lets the install finish without an extension that cannot be compiled, recording why
  for the run-time warning."""

  def run(self):
    self._inplace = self.inplace  # setuptools clears it while building, then copies
    self._not_built = set()
    try:
      super().run()
    except Exception as e:  # setuptools raises several distutils error types here
      for ext in self.extensions:
        if ext.name not in self._not_built:
          self._failed(ext, e)

  def build_extension(self, ext):
    try:
      self._compile(ext)
    except Exception as e:
      self._failed(ext, e)
    else:
      self._record(ext, None)

  def _built(self):
    return [ext for ext in self.extensions if ext.name not in self._not_built]

  def copy_extensions_to_source(self):
    """Copies the extensions that were built (an in-place build) and no others."""
    extensions, self.extensions = self.extensions, self._built()
    try:
      super().copy_extensions_to_source()
    finally:
      self.extensions = extensions

  def get_outputs(self):
    extensions, self.extensions = self.extensions, self._built()
    try:
      return super().get_outputs()
    finally:
      self.extensions = extensions

  def _compile(self, ext):
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

  def _error_paths(self, ext) -> list:
    """Where the package looks for the record: beside the extension in the build tree
    (what a wheel holds) and, for an in-place (editable) build, in the source tree."""
    package, _, _ = ext.name.rpartition(".")
    paths = [os.path.join(self.build_lib, *package.split("."), BUILD_ERROR_FILE)]
    if getattr(self, "_inplace", False):
      build_py = self.get_finalized_command("build_py")
      paths.append(os.path.join(build_py.get_package_dir(package), BUILD_ERROR_FILE))
    return paths

  def _record(self, ext, reason):
    for path in self._error_paths(ext):
      if reason is None:
        if os.path.exists(path):
          os.remove(path)
        continue
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with open(path, "w") as f:
        f.write(reason + "\n")

  def _failed(self, ext, e):
    _, what, fallback = NATIVE_EXTENSIONS[ext.name]
    if os.environ.get("MINIJAX_REQUIRE_NATIVE", "").strip().lower() in ("1", "true", "yes"):
      raise RuntimeError(f"minijax's {what} could not be built: {e}") from e
    reason = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    getattr(self, "_not_built", set()).add(ext.name)
    self._record(ext, reason)
    print(f"warning: minijax's {what} was not built ({reason}); {fallback}. Set "
          "MINIJAX_REQUIRE_NATIVE=1 to make this an error.", file=sys.stderr)


setup(
    ext_modules=[
        Extension(name, sources=[source], language="c++",
                  depends=["csrc/host_array.h", "csrc/callable_type.h", "csrc/interrupts.h"],
                  extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"])
        for name, (source, _, _) in NATIVE_EXTENSIONS.items()
    ],
    cmdclass={"build_ext": _OptionalBuildExt},
)
