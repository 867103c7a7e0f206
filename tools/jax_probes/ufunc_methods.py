import sys, numpy as np
if sys.argv[1] == 'm':
  import minijax as jax, minijax.numpy as jnp
else:
  import jax, jax.numpy as jnp
def case(name, fn):
  try:
    out = fn()
    print(name, '|', [ (np.asarray(o).dtype.name, np.asarray(o).shape, np.round(np.asarray(o, np.float64).ravel()[:8], 4).tolist()) for o in jax.tree_util.tree_leaves(out)])
  except Exception as e:
    print(name, 'raises', type(e).__name__, str(e).splitlines()[0][:100] if str(e) else '')
x = jnp.arange(1., 7.).reshape(2, 3); i = jnp.array([3, 1, 3, 0])
for u in ['add', 'multiply', 'maximum', 'minimum', 'logaddexp', 'bitwise_and', 'logical_or', 'subtract', 'divide', 'power', 'arctan2', 'hypot', 'fmod']:
  f = getattr(jnp, u)
  xx = x if u not in ('bitwise_and', 'logical_or') else x.astype(int)
  case(f'{u}.reduce', lambda: f.reduce(xx, axis=1))
  case(f'{u}.reduce none', lambda: f.reduce(xx, axis=None))
  case(f'{u}.reduce keepdims init', lambda: f.reduce(xx, axis=0, keepdims=True, initial=2))
  case(f'{u}.reduce where', lambda: f.reduce(xx, axis=1, where=jnp.array([True, False, True]), initial=1))
  case(f'{u}.accumulate', lambda: f.accumulate(xx, axis=1))
  case(f'{u}.outer', lambda: f.outer(xx[0], xx[1]))
  case(f'{u}.at', lambda: f.at(jnp.arange(5.) if u not in ('bitwise_and', 'logical_or') else jnp.arange(5), i, 2, inplace=False))
  case(f'{u}.reduceat', lambda: f.reduceat(xx[0], jnp.array([0, 2])))
  case(f'{u} props', lambda: (f.nin, f.nout, f.nargs, f.identity if f.identity is not None else -99))
case('frompyfunc', lambda: jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=1).reduce(x, axis=1))
case('frompyfunc accumulate', lambda: jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1).accumulate(x[0]))
case('ufunc call', lambda: jnp.ufunc(lambda a, b: a - b, 2, 1)(x, 1.))
case('jit reduce', lambda: jax.jit(jnp.add.reduce, static_argnames='axis')(x, axis=0))
case('grad reduce', lambda: jax.grad(lambda a: jnp.multiply.reduce(a, axis=None))(x))
case('vmap accumulate', lambda: jax.vmap(jnp.maximum.accumulate)(x))
