import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp, minijax.lax as lax
else:
  import jax, jax.numpy as jnp, jax.lax as lax

def case(name, fn):
  try:
    out = fn()
    out = jax.tree_util.tree_map(lambda v: np.asarray(v).round(5).tolist(), out)
    print(name, 'ok', out)
  except Exception as e:
    print(name, 'raises', type(e).__name__, str(e).splitlines()[0][:150] if str(e) else '')

for flag in ('jax_debug_nans', 'jax_debug_infs'):
  jax.config.update(flag, True)
  case(flag + ' eager log', lambda: jnp.log(-1.0) if flag.endswith('nans') else jnp.log(0.0))
  case(flag + ' eager fine', lambda: jnp.log(2.0))
  case(flag + ' jit', lambda: jax.jit(lambda x: jnp.log(x) * 2)(-1.0 if flag.endswith('nans') else 0.0))
  case(flag + ' jit fine', lambda: jax.jit(lambda x: jnp.log(x) * 2)(2.0))
  case(flag + ' nan input passes', lambda: jax.jit(lambda x: x + 1)(np.nan if flag.endswith('nans') else np.inf))
  case(flag + ' grad', lambda: jax.grad(lambda x: jnp.sqrt(x))(0.0))
  case(flag + ' vmap', lambda: jax.vmap(lambda x: jnp.log(x))(jnp.array([1.0, -1.0, 0.0])))
  case(flag + ' scan', lambda: lax.scan(lambda c, x: (c + jnp.log(x), c), 0.0, jnp.array([1.0, -1.0, 0.0]))[0])
  case(flag + ' cond', lambda: jax.jit(lambda p, x: lax.cond(p, jnp.log, jnp.exp, x))(True, -1.0))
  case(flag + ' while', lambda: lax.while_loop(lambda c: c < 3.0, lambda c: c + jnp.log(c - 1.0), 0.5))
  case(flag + ' int', lambda: jax.jit(lambda x: x // 2)(7))
  case(flag + ' complex', lambda: jax.jit(lambda x: jnp.log(x))(jnp.complex64(0)))
  case(flag + ' 0/0 eager', lambda: jnp.float32(0) / jnp.float32(0))
  case(flag + ' divide', lambda: jnp.divide(jnp.zeros(2), jnp.array([0.0, 1.0])))
  case(flag + ' pure_callback', lambda: jax.jit(lambda x: jax.pure_callback(lambda a: np.log(a), jax.ShapeDtypeStruct((), np.float32), x))(np.float32(-1)))
  case(flag + ' disable_jit', lambda: (lambda: [jax.jit(lambda x: jnp.log(x))(-1.0 if flag.endswith('nans') else 0.0)
                                              for _ in [0] if jax.config.update('jax_disable_jit', True) is None])()
       )
  jax.config.update('jax_disable_jit', False)
  jax.config.update(flag, False)
  case(flag + ' off again', lambda: jnp.log(-1.0) if flag.endswith('nans') else jnp.log(0.0))

with jax.debug_nans(True):
  case('context nans', lambda: jnp.log(-1.0))
case('context nans after', lambda: jnp.log(-1.0))
with jax.debug_infs(True):
  case('context infs', lambda: jnp.log(0.0))
with jax.disable_jit():
  case('disable_jit context', lambda: jax.jit(lambda x: x * 2)(3.0))
print('flags', jax.config.jax_debug_nans, jax.config.jax_debug_infs, jax.config.jax_disable_jit)
