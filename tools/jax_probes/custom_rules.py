import sys, functools, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp, minijax.lax as lax
else:
  import jax, jax.numpy as jnp, jax.lax as lax

def show(v):
  if isinstance(v, (tuple, list, dict)) or v is None:
    return repr(jax.tree_util.tree_map(lambda a: show(a), v))
  if hasattr(v, 'shape') or isinstance(v, (int, float, complex, np.generic)):
    a = np.asarray(v)
    return f"{a.dtype}{list(a.shape)}:" + ",".join(f"{x:.5g}" for x in a.ravel()[:8])
  return repr(v)

def case(name, fn):
  try:
    print(name, show(fn()))
  except Exception as e:
    print(name, 'raises', type(e).__name__, str(e).splitlines()[0][:160] if str(e) else '')

@jax.custom_jvp
def f(x):
  return jnp.sin(x)
@f.defjvp
def f_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return f(x), 2.0 * jnp.cos(x) * t
case('jvp', lambda: jax.jvp(f, (1.0,), (1.0,)))
case('grad', lambda: jax.grad(f)(1.0))
case('grad grad', lambda: jax.grad(jax.grad(f))(1.0))
case('vmap grad', lambda: jax.vmap(jax.grad(f))(jnp.arange(3.0)))
case('jit grad', lambda: jax.jit(jax.grad(f))(1.0))
case('scan grad', lambda: jax.grad(lambda x: lax.scan(lambda c, _: (f(c), None), x, None, length=3)[0])(0.5))

@jax.custom_jvp
def g(x, y):
  return x * y
g.defjvps(lambda t, ans, x, y: t * y * 10, lambda t, ans, x, y: t * x * 100)
case('defjvps', lambda: jax.grad(g, argnums=(0, 1))(2.0, 3.0))
g2 = jax.custom_jvp(lambda x, y: x * y)
g2.defjvps(None, lambda t, ans, x, y: t * 5.0)
case('defjvps None', lambda: jax.grad(g2, argnums=(0, 1))(2.0, 3.0))

@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def h(n, x):
  return x ** n
@h.defjvp
def h_jvp(n, primals, tangents):
  (x,), (t,) = primals, tangents
  return x ** n, n * x ** (n - 1) * t * 3
case('nondiff', lambda: jax.grad(h, argnums=1)(2, 3.0))
case('nondiff traced', lambda: jax.jit(lambda n, x: jax.grad(h, argnums=1)(n, x))(2, 3.0))

bad = jax.custom_jvp(lambda x: x)
bad.defjvp(lambda p, t: (p[0], t[0].astype(jnp.float16)))
case('bad tangent dtype', lambda: jax.jvp(bad, (1.0,), (1.0,)))
bad2 = jax.custom_jvp(lambda x: x)
bad2.defjvp(lambda p, t: (p[0], (t[0], t[0])))
case('bad tangent tree', lambda: jax.jvp(bad2, (1.0,), (1.0,)))
bad3 = jax.custom_jvp(lambda x: x)
bad3.defjvp(lambda p, t: (p[0] * 2, t[0]))
case('bad primal out', lambda: jax.jvp(bad3, (1.0,), (1.0,)))
bad4 = jax.custom_jvp(lambda x: (x, x))
bad4.defjvp(lambda p, t: ((p[0], p[0]), t[0]))
case('bad tangent structure', lambda: jax.jvp(bad4, (1.0,), (1.0,)))
nojvp = jax.custom_jvp(lambda x: x)
case('no jvp rule', lambda: jax.grad(nojvp)(1.0))
case('no jvp rule eval', lambda: nojvp(1.0))

@jax.custom_vjp
def v(x, y):
  return jnp.sin(x) * y
def v_fwd(x, y):
  return v(x, y), (jnp.cos(x), jnp.sin(x), y)
def v_bwd(res, g):
  c, s, y = res
  return (c * g * y * 10, s * g)
v.defvjp(v_fwd, v_bwd)
case('vjp', lambda: jax.grad(v, argnums=(0, 1))(1.0, 2.0))
case('vjp vmap', lambda: jax.vmap(jax.grad(v))(jnp.arange(3.0), jnp.ones(3)))
case('vjp jit scan', lambda: jax.jit(jax.grad(lambda x: lax.scan(lambda c, _: (v(c, 2.0), None), x, None, length=2)[0]))(0.3))
case('vjp jvp', lambda: jax.jvp(v, (1.0, 2.0), (1.0, 0.0)))
case('vjp fwd-mode grad', lambda: jax.jacfwd(v)(1.0, 2.0))

w = jax.custom_vjp(lambda x: x * 2)
w.defvjp(lambda x: (x * 2, None), lambda r, g: (g, g))
case('bwd too many', lambda: jax.grad(w)(1.0))
w2 = jax.custom_vjp(lambda x: x * 2)
w2.defvjp(lambda x: (x * 2, None), lambda r, g: g)
case('bwd not tuple', lambda: jax.grad(w2)(1.0))
w3 = jax.custom_vjp(lambda x: x * 2)
w3.defvjp(lambda x: (x * 2, None), lambda r, g: (jnp.ones(3),))
case('bwd wrong shape', lambda: jax.grad(w3)(1.0))
w4 = jax.custom_vjp(lambda x: x * 2)
w4.defvjp(lambda x: ((x * 2, x), None), lambda r, g: (g,))
case('fwd wrong out', lambda: jax.grad(w4)(1.0))
w5 = jax.custom_vjp(lambda x: x * 2)
w5.defvjp(lambda x: x * 2, lambda r, g: (g,))
case('fwd not pair', lambda: jax.grad(w5)(1.0))
w6 = jax.custom_vjp(lambda x: {'a': x}, )
w6.defvjp(lambda x: ({'a': x}, None), lambda r, g: (g['a'] * 3,))
case('dict out', lambda: jax.grad(lambda x: w6(x)['a'])(1.0))
w7 = jax.custom_vjp(lambda x: x * 2)
w7.defvjp(lambda x: (x * 2, None), lambda r, g: (None,))
case('bwd None', lambda: jax.grad(w7)(1.0))
w8 = jax.custom_vjp(lambda x, n: x * n)
w8.defvjp(lambda x, n: (x * n, n), lambda n, g: (g * n, None))
case('int arg', lambda: jax.grad(w8)(1.0, 3))

@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def app(x, fn):
  return fn(x)
app.defvjp(lambda x, fn: (fn(x), x), lambda fn, x, g: (g * 100.0,))
case('nondiff function', lambda: jax.grad(app)(1.0, jnp.sin))

sz = jax.custom_jvp(lambda x, y: x * y)
@sz.defjvp
def sz_jvp(p, t):
  return p[0] * p[1], jax.tree_util.tree_map(lambda a: type(a).__name__, t)[0] == 'x' or t[0] * p[1] + t[1] * p[0]
case('symbolic zeros off', lambda: jax.jvp(lambda x: sz(x, 2.0), (1.0,), (1.0,)))

k = jax.custom_jvp(lambda x, *, scale=1.0: x * scale)
k.defjvp(lambda p, t: (p[0], t[0]))
case('kwargs', lambda: k(2.0, scale=3.0))
case('closure', lambda: jax.grad(lambda y: jax.custom_jvp(lambda x: x * y).__call__(2.0) if False else 0.0)(1.0))
case('custom_gradient', lambda: jax.grad(jax.custom_gradient(lambda x: (x ** 2, lambda g: (g * 10,))))(3.0))
case('linear_call', lambda: jax.grad(lambda x: jax.custom_derivatives.linear_call(lambda _, y: 2 * y, lambda _, y: 7 * y, None, x))(1.0))
case('closure_convert grad', lambda: jax.grad(lambda y: (lambda cc: cc[0](2.0, *cc[1]))(jax.closure_convert(lambda x: x * y, 2.0)))(3.0))
case('stop_gradient', lambda: jax.grad(lambda x: x * lax.stop_gradient(x))(3.0))
case('custom_jvp make_jaxpr', lambda: str(jax.make_jaxpr(f)(1.0)).split('\n')[1].strip()[:60])
case('custom_vjp make_jaxpr', lambda: str(jax.make_jaxpr(v)(1.0, 2.0)).split('\n')[1].strip()[:60])
