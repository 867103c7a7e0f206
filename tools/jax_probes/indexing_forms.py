import sys, numpy as np
if sys.argv[1] == 'm':
  import minijax as jax, minijax.numpy as jnp
else:
  import jax, jax.numpy as jnp

def fmt(v):
  v = np.asarray(v)
  return f"{v.dtype}{list(v.shape)} " + ' '.join(f"{x:.4g}" if v.dtype.kind == 'f' else str(x) for x in v.ravel()[:10])

def case(name, fn):
  try:
    out = fn()
    print(name, '|', ' || '.join(fmt(o) for o in jax.tree_util.tree_leaves(out)))
  except Exception as e:
    print(name, 'raises', type(e).__name__)

x = jnp.arange(60.).reshape(3, 4, 5)
nx = np.arange(60.).reshape(3, 4, 5)
I = np.array
INDEX = {
  'int': 1, 'neg int': -1, 'np int': np.int64(2), 'jnp int': jnp.int32(1), 'slice': slice(1, None),
  'neg step': slice(None, None, -2), 'slice oob': slice(-10, 10), 'empty slice': slice(3, 1),
  'tuple ints': (1, 2, 3), 'ellipsis': (Ellipsis, 1), 'none': (None, 1, None),
  'ellipsis none': (Ellipsis, None), 'array': I([0, 2]), 'neg array': I([-1, 0, -3]),
  '2d array': I([[0, 1], [2, 0]]), 'arrays bcast': (I([0, 2]), I([[1], [3]])),
  'arrays split': (I([0, 1]), slice(None), I([4, 0])), 'array slice array': (slice(None), I([1, 2]), I([0, 3])),
  'bool mask': nx[:, 0, 0] > 10, 'bool 2d': nx[:, :, 0] > 22, 'bool 3d': nx > 50,
  'bool scalar True': True, 'bool scalar False': False, 'bool and int': (nx[:, 0, 0] > 10, 1),
  'empty array': I([], dtype=int), 'uint index': I([1, 2], dtype=np.uint8), 'int8 index': I([-1], dtype=np.int8),
  'none array': (None, I([0, 1])), 'array none array': (I([0, 1]), None, I([1, 2])),
  'ellipsis array': (Ellipsis, I([0, 4])), 'jnp array': jnp.array([2, 0]),
  'scalar array': I(1), '0d bool': I(True),
}
for name, idx in INDEX.items():
  case(f'get {name}', lambda: x[idx])
  case(f'numpy {name}', lambda: nx[idx])
  case(f'set {name}', lambda: x.at[idx].set(-1.))
  case(f'add {name}', lambda: x.at[idx].add(1.))
  if name not in ('bool mask', 'bool 2d', 'bool 3d', 'bool and int'):
    case(f'jit get {name}', lambda: jax.jit(lambda a: a[idx])(x))
    case(f'grad get {name}', lambda: jax.grad(lambda a: jnp.sum(a[idx] ** 2))(x)[0, :2])
  case(f'vmap get {name}', lambda: jax.vmap(lambda a: a[idx[1:] if isinstance(idx, tuple) and len(idx) > 2 else idx] if not isinstance(idx, bool) else a)(x))
case('oob get', lambda: x[5])
case('oob array get', lambda: x[I([0, 7, -9])])
case('oob array get jit', lambda: jax.jit(lambda a, i: a[i])(x, jnp.array([0, 7, -9])))
case('oob set', lambda: x.at[I([0, 7, -9])].set(-1.)[:, 0, 0])
case('oob mode fill', lambda: x.at[I([0, 7, -9])].get(mode='fill', fill_value=-5.)[:, 0, 0])
case('oob mode clip', lambda: x.at[I([0, 7, -9])].get(mode='clip')[:, 0, 0])
case('oob mode drop set', lambda: x.at[I([0, 7])].set(-1., mode='drop')[:, 0, 0])
case('oob mode clip set', lambda: x.at[I([0, 7])].set(-1., mode='clip')[:, 0, 0])
case('oob promise', lambda: x.at[I([0, 2])].get(mode='promise_in_bounds')[:, 0, 0])
case('list index', lambda: x[[0, 1]])
case('list of lists', lambda: x[[[0, 1]]])
case('float index', lambda: x[1.0])
case('float array index', lambda: x[I([1.0])])
case('string index', lambda: x['a'])
case('too many', lambda: x[0, 0, 0, 0])
case('two ellipsis', lambda: x[..., 0, ...])
case('bool wrong shape', lambda: x[I([True, False])])
case('bool traced', lambda: jax.jit(lambda a: a[a > 5])(x))
case('dynamic slice traced', lambda: jax.jit(lambda a, i: a[i:i + 2])(x, 1))
case('static slice traced start', lambda: jax.jit(lambda a, i: jax.lax.dynamic_slice_in_dim(a, i, 2))(x, 2))
case('at mul', lambda: x.at[0, 0].multiply(2.)[0, 0])
case('at divide', lambda: x.at[0, 0].divide(2.)[0, 0])
case('at power', lambda: x.at[0, 0].power(2.)[0, 0])
case('at min max', lambda: (x.at[0, 0].min(2.)[0, 0], x.at[0, 0].max(2.)[0, 0]))
case('at apply', lambda: x.at[0, 0].apply(jnp.sin)[0, 0])
case('at set dtype', lambda: jnp.arange(3).at[0].set(2.7))
case('at set bcast', lambda: x.at[:, 0].set(jnp.arange(5.))[:, 0])
case('at set bad shape', lambda: x.at[:, 0].set(jnp.arange(4.)))
case('at add unique', lambda: x.at[I([0, 2])].add(1., unique_indices=True, indices_are_sorted=True)[:, 0, 0])
case('at get wrap', lambda: x.at[I([0, 4])].get(wrap_negative_indices=False, mode='fill', fill_value=0.)[:, 0, 0])
case('at neg nowrap', lambda: x.at[I([-1])].get(wrap_negative_indices=False, mode='fill', fill_value=7.)[:, 0, 0])
case('slice setitem int', lambda: jnp.arange(5).at[1:3].add(1))
case('nd int array', lambda: x[jnp.array([[True, False, True, False]] * 3)])
case('take_along_axis', lambda: jnp.take_along_axis(x, jnp.array([[[0], [1], [2], [3]]] * 3), axis=2)[..., 0])
case('take modes', lambda: [jnp.take(x, jnp.array([0, 70]), mode=m) for m in ('clip', 'wrap', 'fill')])
case('take default', lambda: jnp.take(x, jnp.array([0, 70])))
case('take axis', lambda: jnp.take(x, jnp.array([-1, 4]), axis=1)[0])
case('unique indices grad', lambda: jax.grad(lambda a: jnp.sum(a.at[I([0, 0])].get(unique_indices=True)))(x)[:, 0, 0])
