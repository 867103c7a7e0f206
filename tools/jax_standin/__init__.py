"""The conformance runner's stand-ins: JAX's test files run on JAX's public API only.

`test_util.py` stands in for `jax._src.test_util`; `internals.py` answers the test file's
other `jax._src` imports; `plugin.py` is the pytest plugin that puts `jax` (JAX or minijax)
in place, loads the test file through the stand-ins, and records each test's outcome.
"""
