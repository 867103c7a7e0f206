import sys, numpy as np, ml_dtypes, itertools
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import dtypes
else:
  import jax, jax.numpy as jnp
  from jax import dtypes
def show(n, f):
  try: print(n, f())
  except Exception as e: print(n, 'ERR', type(e).__name__, str(e).split('\n')[0][:100])
ts = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128, ml_dtypes.float8_e4m3fn, ml_dtypes.int4, ml_dtypes.uint4]
for x64 in (False, True):
  jax.config.update('jax_enable_x64', x64)
  out = []
  for a, b in itertools.combinations_with_replacement(ts, 2):
    try: out.append(np.dtype(jnp.promote_types(a, b)).name)
    except Exception as e: out.append('E')
  print('promote', x64, out)
  out = []
  for a in ts:
    for w in (1, 1.0, 1j, True):
      try: out.append(np.dtype(jnp.result_type(a, w)).name)
      except Exception: out.append('E')
  print('weak', x64, out)
  show('canon', lambda: [np.dtype(dtypes.canonicalize_dtype(t)).name for t in ts])
jax.config.update('jax_enable_x64', False)
show('issubdtype', lambda: [jnp.issubdtype(t, k) for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4, np.float32) for k in (jnp.floating, jnp.inexact, jnp.integer, jnp.signedinteger, np.number)])
show('isdtype', lambda: [jnp.isdtype(t, k) for t in (ml_dtypes.bfloat16, ml_dtypes.int4, np.uint8) for k in ('real floating', 'signed integer', 'unsigned integer', 'integral', 'numeric')])
show('finfo', lambda: [(str(jnp.finfo(t).eps), jnp.finfo(t).bits) for t in (ml_dtypes.bfloat16, np.float16, ml_dtypes.float8_e4m3fn)])
show('iinfo', lambda: [(jnp.iinfo(t).min, jnp.iinfo(t).max) for t in (ml_dtypes.int4, np.uint8, np.int64)])
show('itemsize_bits', lambda: [dtypes.itemsize_bits(t) for t in (ml_dtypes.int4, ml_dtypes.float4_e2m1fn, ml_dtypes.float6_e2m3fn, np.float32, np.bool_)])
show('is_weakly_typed', lambda: (dtypes.is_weakly_typed(jnp.asarray(1.)), dtypes.is_weakly_typed(jnp.float32(1))))
show('scalar_type_of', lambda: [dtypes.scalar_type_of(x).__name__ for x in (1, 1.0, np.int8(1), jnp.ones(2, jnp.bfloat16))])
show('result_type return_weak', lambda: dtypes.result_type(1.0, return_weak_type_flag=True))
show('float0', lambda: (dtypes.float0, np.dtype(dtypes.float0).itemsize))
show('jnp dtype names', lambda: [jnp.dtype(x).name for x in ('bfloat16', 'float8_e5m2', 'int2', 'uint2', 'float4_e2m1fn')])
show('astype int4', lambda: jnp.arange(4).astype(jnp.int4).dtype)
show('bool promo', lambda: (jnp.ones(2, bool) + True).dtype)
show('uint64+int', lambda: (jnp.ones(2, jnp.uint32) + jnp.ones(2, jnp.int32)).dtype)
show('default types', lambda: (dtypes.default_float_dtype() if hasattr(dtypes, 'default_float_dtype') else None))
show('dtype of python int big', lambda: jnp.asarray(2**40))
show('prng key dtype', lambda: (jnp.issubdtype(jax.random.key(0).dtype, dtypes.prng_key), str(jax.random.key(0).dtype)))
show('extended', lambda: jnp.issubdtype(jax.random.key(0).dtype, dtypes.extended))
