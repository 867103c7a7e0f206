import sys, numpy as np
if sys.argv[1] == 'm':
  import minijax as jax, minijax.numpy as jnp
else:
  import jax, jax.numpy as jnp
jax.config.update('jax_enable_x64', True)


def show(n, f):
  try:
    out = f()
    print(n, jax.tree_util.tree_map(lambda a: (np.asarray(a).dtype.name, np.asarray(a).tolist()), out))
  except Exception as e:
    print(n, 'ERR', type(e).__name__, str(e).split('\n')[0][:100])


a = np.array([3., 1., 3., 2., np.nan, 1., np.nan]); b = np.array([2., 5., 2., 7.])
i = np.array([4, 1, 4, 0, 2, 1]); j = np.array([1, 9, 4])
e = np.zeros(0)
for tag, call in [('eager', lambda f, *xs: f(*xs)), ('jit', lambda f, *xs: jax.jit(f)(*xs))]:
  for size in (2, 4, 9):
    for fill in (None, -1):
      k = f'{tag} size={size} fill={fill}'
      show(f'unique {k}', lambda: call(lambda x: jnp.unique(x, size=size, fill_value=fill), i))
      show(f'unique nan {k}', lambda: call(lambda x: jnp.unique(x, size=size, fill_value=fill), a))
      show(f'unique nan unequal {k}', lambda: call(lambda x: jnp.unique(x, size=size, fill_value=fill, equal_nan=False), a))
      show(f'unique all {k}', lambda: call(lambda x: jnp.unique(x, return_index=True, return_inverse=True, return_counts=True, size=size, fill_value=fill), i))
      show(f'unique_all {k}', lambda: call(lambda x: tuple(jnp.unique_all(x, size=size, fill_value=fill)), a))
      show(f'union1d {k}', lambda: call(lambda x, y: jnp.union1d(x, y, size=size, fill_value=fill), i, j))
      show(f'intersect1d {k}', lambda: call(lambda x, y: jnp.intersect1d(x, y, size=size, fill_value=fill), i, j))
      show(f'intersect1d indices {k}', lambda: call(lambda x, y: jnp.intersect1d(x, y, return_indices=True, size=size, fill_value=fill), i, j))
      show(f'intersect1d unique {k}', lambda: call(lambda x, y: jnp.intersect1d(x, y, assume_unique=True, size=size, fill_value=fill), np.array([4, 1, 0]), j))
      show(f'setdiff1d {k}', lambda: call(lambda x, y: jnp.setdiff1d(x, y, size=size, fill_value=fill), i, j))
      show(f'setdiff1d float {k}', lambda: call(lambda x, y: jnp.setdiff1d(x, y, size=size, fill_value=fill), a, b))
      show(f'setxor1d {k}', lambda: call(lambda x, y: jnp.setxor1d(x, y, size=size, fill_value=fill), i, j))
      show(f'setxor1d unique {k}', lambda: call(lambda x, y: jnp.setxor1d(x, y, assume_unique=True, size=size, fill_value=fill), np.array([4, 1, 0]), j))
      show(f'setdiff1d empty {k}', lambda: call(lambda x, y: jnp.setdiff1d(x, y, size=size, fill_value=fill), j, j))
      show(f'intersect1d empty {k}', lambda: call(lambda x, y: jnp.intersect1d(x, y, size=size, fill_value=fill), np.array([3., 8.]), b))
show('unique grad', lambda: jax.grad(lambda x: jnp.unique(x, size=4, fill_value=0.).sum())(a[:4]))
show('union1d grad', lambda: jax.grad(lambda x: (jnp.union1d(x, b, size=6) ** 2).sum())(a[:4]))
show('intersect1d grad', lambda: jax.grad(lambda x: (jnp.intersect1d(x, b, size=3) ** 2).sum())(a[:4]))
show('setdiff1d grad', lambda: jax.grad(lambda x: (jnp.setdiff1d(x, b, size=3) ** 2).sum())(a[:4]))
show('setxor1d grad', lambda: jax.grad(lambda x: (jnp.setxor1d(x, b, size=3) ** 2).sum())(a[:4]))
show('unique vmap', lambda: jax.vmap(lambda x: jnp.unique(x, size=3, fill_value=-1))(np.array([[1, 1, 2, 5], [3, 3, 3, 3]])))
show('unique axis jit', lambda: jax.jit(lambda x: jnp.unique(x, axis=0, size=3))(np.array([[1, 2], [1, 2], [0, 5]])))
show('unique empty jit', lambda: jax.jit(lambda x: jnp.unique(x, size=2))(e))
show('unique no size jit', lambda: jax.jit(lambda x: jnp.unique(x))(i))
