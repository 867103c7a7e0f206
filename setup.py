"""Builds minijax's two native pieces: the tap queue with its XLA FFI handler, and the
FFI handler of value-returning host calls (`pure_callback`, `io_callback`).

The handlers are written against the header-only XLA FFI API that jaxlib ships in
`jaxlib/include`, and both build numpy arrays through numpy's C API, so the build needs
jaxlib (the same version as at run time), numpy and a C++17 compiler, nothing else.  If an
extension cannot be built, the package still installs: the runtime then falls back to
jaxlib's Python callback mechanism.
"""
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _jaxlib_include() -> str:
  import jaxlib
  return os.path.join(os.path.dirname(jaxlib.__file__), "include")


class _OptionalBuildExt(build_ext):
  """Lets the install finish without the extension when it cannot be compiled."""

  def run(self):
    try:
      super().run()
    except Exception as e:  # setuptools raises several distutils error types here
      self._warn(e)

  def build_extension(self, ext):
    try:
      import numpy
      ext.extra_compile_args = ext.extra_compile_args + [
          "-isystem", _jaxlib_include(), "-isystem", numpy.get_include()]
      super().build_extension(ext)
    except Exception as e:
      self._warn(e)

  _warned: set = set()

  def _warn(self, e):
    if str(e) in self._warned:
      return
    self._warned.add(str(e))
    print(f"warning: a native extension of minijax was not built ({e}); "
          "host callbacks will use the Python callback mechanism", file=sys.stderr)


setup(
    ext_modules=[
        Extension(
            "minijax.runtime.taps._native",
            sources=["csrc/tap_queue.cc"],
            language="c++",
            extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"],
        ),
        Extension(
            "minijax.runtime.host_calls._native",
            sources=["csrc/host_call.cc"],
            language="c++",
            extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"],
        ),
    ],
    cmdclass={"build_ext": _OptionalBuildExt},
)
