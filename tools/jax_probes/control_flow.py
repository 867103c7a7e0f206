import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
else:
  import jax, jax.numpy as jnp
  from jax import lax
def show(n, f):
  try:
    out = f()
    print(n, jax.tree_util.tree_map(lambda a: np.round(np.asarray(a, np.float64), 4).tolist(), out))
  except Exception as e: print(n, 'ERR', type(e).__name__, str(e).split('\n')[0][:110])
x = jnp.arange(5.)
show('switch clamp', lambda: [lax.switch(i, [lambda v: v, lambda v: v * 2, lambda v: v * 3], 1.) for i in (-1, 0, 5)])
show('vmap while', lambda: jax.vmap(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2), (0, 1.)))(jnp.array([1, 3, 5])))
show('vmap cond', lambda: jax.vmap(lambda v: lax.cond(v > 2, jnp.sin, jnp.cos, v))(x))
show('grad fori traced', lambda: jax.grad(lambda v, n: lax.fori_loop(0, n, lambda i, c: c * v, 1.))(2., 3))
show('grad fori dynamic', lambda: jax.jit(jax.grad(lambda v, n: lax.fori_loop(0, n, lambda i, c: c * v, 1.)))(2., 3))
show('scan unroll', lambda: lax.scan(lambda c, a: (c + a, c * a), 0., x, unroll=2))
show('scan reverse', lambda: lax.scan(lambda c, a: (c + a, c), 0., x, reverse=True))
show('scan length', lambda: lax.scan(lambda c, _: (c + 1, c), 0, None, length=3))
show('scan mismatch', lambda: lax.scan(lambda c, a: (c, a), 0., (x, jnp.ones(3))))
show('scan carry type', lambda: lax.scan(lambda c, a: (c + a, None), 0, x))
show('while grad', lambda: jax.grad(lambda v: lax.while_loop(lambda c: c < 10, lambda c: c * v, 1.))(2.))
show('cond grad', lambda: jax.grad(lambda v: lax.cond(v > 0, lambda a: a ** 2, lambda a: -a, v))(3.))
show('cond operands', lambda: lax.cond(True, lambda a, b: a + b, lambda a, b: a - b, 1., 2.))
show('cond diff types', lambda: lax.cond(True, lambda a: a, lambda a: a.astype(jnp.int32), 1.))
show('switch grad', lambda: jax.grad(lambda v: lax.switch(1, [jnp.sin, jnp.cos], v))(1.))
show('map', lambda: lax.map(lambda v: v * 2, x))
show('assoc scan', lambda: lax.associative_scan(jnp.add, x, reverse=True))
show('cumsum rev', lambda: lax.cumsum(x, reverse=True))
show('fori float bounds', lambda: lax.fori_loop(0., 3., lambda i, c: c + i, 0.))
show('scan jvp', lambda: jax.jvp(lambda v: lax.scan(lambda c, a: (c * v + a, c), 0., x)[0], (2.,), (1.,)))
show('vmap scan', lambda: jax.vmap(lambda v: lax.scan(lambda c, a: (c * v + a, c), 0., x)[1])(jnp.array([1., 2.])))
show('while_loop jvp', lambda: jax.jvp(lambda v: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * v), (0, 1.))[1], (2.,), (1.,)))
show('custom_root', lambda: lax.custom_root(lambda y: y ** 2 - 2., 1., lambda f, y0: 1.41421356, lambda g, y: y / 2.))
show('cond index bool', lambda: lax.cond(jnp.array([True]), lambda: 1., lambda: 2.))
show('platform_dependent', lambda: lax.platform_dependent(1., cpu=lambda v: v * 2, default=lambda v: v))
show('optimization_barrier', lambda: lax.optimization_barrier((x, 1.)))
