"""The persistent compilation cache: executables kept in a directory across processes, as
JAX's (`config.update("jax_compilation_cache_dir", path)`, or
`minijax.experimental.compilation_cache.compilation_cache.set_cache_dir(path)`).

`compile_and_load` is what both executables' `compile` call instead of the client's.  With
a directory set (and `jax_enable_compilation_cache`, the default), a module is looked up by
a key hashed from what decides the machine code: the module's text without debug
locations, the compile options, the devices it is placed on, jaxlib's version, the
platform's version and (on the CPU, whose code XLA builds for the host's instruction set)
the processor's features.  A hit deserializes the stored executable; a miss compiles, and
stores the result when compiling took at least `jax_persistent_cache_min_compile_time_secs`
(1 s by default, as JAX) and it is at least `jax_persistent_cache_min_entry_size_bytes`.
Programs that call back into this process (taps, host callbacks, any effect) are never
stored: their executables refer to objects that live only here.  Entries are written to a
temporary file and renamed into place, so concurrent processes never read half an entry; a
corrupt or unreadable entry is compiled again (and logged), never raised.

Counters as JAX's (`minijax.monitoring`): `/jax/compilation_cache/compile_requests_use_cache`
for each lookup, `/jax/compilation_cache/cache_hits` and `/jax/compilation_cache/cache_misses`,
each with the program's `fun_name` (`"jit(f)"`).
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
import time

import jaxlib

from minijax import monitoring
from minijax.config import config

logger = logging.getLogger("minijax")

_REQUESTS = "/jax/compilation_cache/compile_requests_use_cache"
_HITS = "/jax/compilation_cache/cache_hits"
_MISSES = "/jax/compilation_cache/cache_misses"


def directory() -> str | None:
  """The cache's directory, or None when the cache is off."""
  path = config.compilation_cache_dir
  return os.fspath(path) if path and config.enable_compilation_cache else None


@functools.cache
def _processor_features() -> str:
  try:
    with open("/proc/cpuinfo") as f:
      return next((line for line in f if line.startswith("flags")), "")
  except OSError:
    return ""


def key(module, options, client, device_ids) -> str:
  """The entry's name: a SHA-256 of everything that decides the machine code."""
  digest = hashlib.sha256()
  text = module.operation.get_asm(enable_debug_info=False)
  for part in (text, options.SerializeAsString(), repr(tuple(device_ids)), jaxlib.__version__,
               client.platform, client.platform_version,
               _processor_features() if client.platform == "cpu" else ""):
    digest.update(part.encode() if isinstance(part, str) else part)
    digest.update(b"\0")
  return "minijax-" + digest.hexdigest()


def compile_and_load(client, module, device_list, options, *, host_callbacks, cacheable: bool,
                     name: str, device_ids):
  """`client.compile_and_load(...)`, through the cache when it is on and `cacheable`."""
  path = directory() if cacheable and not host_callbacks else None
  if path is None:
    return client.compile_and_load(module, device_list, options,
                                   host_callbacks=list(host_callbacks))
  entry = os.path.join(path, key(module, options, client, device_ids))
  fun_name = f"jit({name})"
  monitoring.record_event(_REQUESTS, fun_name=fun_name)
  loaded = _load(client, entry, device_list, options, name)
  if loaded is not None:
    monitoring.record_event(_HITS, fun_name=fun_name)
    return loaded
  monitoring.record_event(_MISSES, fun_name=fun_name)
  start = time.perf_counter()
  loaded = client.compile_and_load(module, device_list, options, host_callbacks=[])
  if time.perf_counter() - start >= config.persistent_cache_min_compile_time_secs:
    _store(client, entry, loaded, path, name)
  return loaded


def _load(client, entry: str, device_list, options, name: str):
  try:
    with open(entry, "rb") as f:
      data = f.read()
  except FileNotFoundError:
    return None
  except OSError as err:
    logger.warning("minijax: could not read the compilation cache entry %s: %s", entry, err)
    return None
  try:
    loaded = client.deserialize_executable(data, device_list, options)
  except Exception as err:  # noqa: BLE001  (a corrupt entry is compiled again)
    logger.warning("minijax: the compilation cache entry %s for %r could not be loaded (%s); "
                   "compiling instead", entry, name, err)
    return None
  logger.debug("minijax: persistent compilation cache hit for %r", name)
  return loaded


def _store(client, entry: str, loaded, path: str, name: str) -> None:
  try:
    data = client.serialize_executable(loaded)
    if len(data) < config.persistent_cache_min_entry_size_bytes:
      return
    os.makedirs(path, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path, prefix=".writing-")
    with os.fdopen(fd, "wb") as f:
      f.write(data)
    os.replace(temporary, entry)
  except Exception as err:  # noqa: BLE001  (the program runs on without its entry)
    logger.warning("minijax: could not write the compilation cache entry for %r to %s: %s",
                   name, path, err)
