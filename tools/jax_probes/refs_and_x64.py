import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp, minijax.lax as lax
else:
  import jax, jax.numpy as jnp, jax.lax as lax

def show(v):
  v = np.asarray(v)
  return f"{v.dtype} {v.shape} " + " ".join(f"{x:.5g}" for x in v.ravel()[:12])

def case(name, fn):
  try:
    out = fn()
    print(name, ' | '.join(show(o) if hasattr(o, 'shape') or isinstance(o, (int, float)) else repr(o)
                          for o in (out if isinstance(out, tuple) else (out,))))
  except Exception as e:
    print(name, 'raises', type(e).__name__, str(e).splitlines()[0][:120] if str(e) else '')

# eager refs
r = jax.new_ref(jnp.arange(6.0).reshape(2, 3))
r[0, 1] = 10.0; r[1] += 1.0; r[:, 2] *= 2.0
case('eager', lambda: (r[...], r[1], r[:, 0], jax.ref.get(r, (0,))))
print('repr', repr(r), str(jax.typeof(r)))
case('freeze', lambda: jax.freeze(jax.new_ref(jnp.ones(2))))
case('swap', lambda: (jax.ref.swap(r, (0, 0), 7.0), r[0, 0]))
case('addupdate', lambda: (jax.ref.addupdate(r, (1,), jnp.ones(3)), r[1])[1])
case('int ref', lambda: (lambda q: (q.__setitem__(..., q[...] + 2), q[...])[1])(jax.new_ref(jnp.int32(3))))
case('empty_ref', lambda: str(jax.typeof(jax.empty_ref(jax.ShapeDtypeStruct((2,), jnp.float32)))))

# under jit
def f(x):
  ref = jax.new_ref(jnp.zeros_like(x))
  ref[...] = x * 2
  ref[0] += 1.0
  return ref[1], jax.freeze(ref)
case('jit new_ref', lambda: jax.jit(f)(jnp.arange(3.0)))
print('jaxpr', str(jax.make_jaxpr(f)(jnp.arange(3.0))).replace('\n', ' / '))
counter = jax.new_ref(jnp.zeros(3))
@jax.jit
def bump(i):
  counter[i] += 1.0
case('jit closed ref', lambda: (bump(1), bump(1), bump(2), counter[...])[-1])
def g(ref, x):
  ref[...] += x
  return ref[...].sum()
case('ref argument', lambda: (lambda ref: (jax.jit(g)(ref, jnp.ones(2)), ref[...]))(jax.new_ref(jnp.ones(2))))

# control flow with refs
def loop(x):
  acc = jax.new_ref(jnp.float32(0.0))
  def body(i, c):
    acc[...] += x[i]
    return c
  lax.fori_loop(0, x.shape[0], body, None)
  return acc[...]
case('fori ref', lambda: jax.jit(loop)(jnp.arange(5.0)))
def scan_ref(x):
  acc = jax.new_ref(jnp.zeros(2))
  def body(c, xi):
    acc[0] += xi
    acc[1] = jnp.maximum(acc[1], xi)
    return c + xi, acc[0]
  c, ys = lax.scan(body, 0.0, x)
  return c, ys, acc[...]
case('scan ref', lambda: jax.jit(scan_ref)(jnp.array([1.0, 3.0, -2.0])))
def cond_ref(p, x):
  ref = jax.new_ref(x)
  def yes():
    ref[...] = ref[...] * 10
  def no():
    ref[...] = -ref[...]
  lax.cond(p, yes, no)
  return ref[...]
case('cond ref', lambda: (jax.jit(cond_ref)(True, jnp.ones(2)), jax.jit(cond_ref)(False, jnp.ones(2))))
def while_ref(n):
  ref = jax.new_ref(jnp.int32(1))
  def body(i):
    ref[...] = ref[...] * 2
    return i + 1
  lax.while_loop(lambda i: i < n, body, 0)
  return ref[...]
case('while ref', lambda: jax.jit(while_ref)(5))

# autodiff and vmap through refs
def h(x):
  ref = jax.new_ref(x)
  ref[...] = jnp.sin(ref[...]) * x
  return ref[...].sum()
case('grad', lambda: jax.grad(h)(jnp.array([0.5, 1.0])))
case('jvp', lambda: jax.jvp(h, (jnp.array([0.5, 1.0]),), (jnp.ones(2),)))
case('vmap', lambda: jax.vmap(h)(jnp.array([[0.5, 1.0], [2.0, 3.0]])))
def vmapped_update(xs):
  ref = jax.new_ref(jnp.zeros(3))
  def one(x):
    ref[...] += x
    return x
  jax.vmap(one)(xs)
  return ref[...]
case('vmap into outer ref', lambda: vmapped_update(jnp.ones((2, 3))))
case('grad of scan with ref', lambda: jax.grad(lambda x: scan_ref(x)[0])(jnp.array([1.0, 3.0, -2.0])))

# errors
case('ref returned from jit', lambda: jax.jit(lambda: jax.new_ref(1.0))())
case('shape mismatch', lambda: jax.new_ref(jnp.zeros(3)).__setitem__(..., jnp.zeros(4)))
case('dtype set', lambda: (lambda q: (q.__setitem__(..., 1.5), q[...])[1])(jax.new_ref(jnp.zeros(2, jnp.int32))))
case('ref of ref', lambda: jax.new_ref(jax.new_ref(1.0)))
case('ref aliased twice', lambda: jax.jit(lambda a, b: None)(counter, counter))

# x64 contexts
jax.config.update('jax_enable_x64', False)
print('x64 default', jnp.zeros(1).dtype, jnp.arange(3).dtype)
with jax.enable_x64():
  print('x64 on', jnp.zeros(1).dtype, jnp.arange(3).dtype, jnp.array(1.5).dtype, jax.jit(lambda x: x * 2)(np.float64(1)).dtype)
  with jax.enable_x64(False):
    print('x64 nested off', jnp.zeros(1).dtype)
  print('x64 back on', jnp.ones(1).dtype, jax.random.uniform(jax.random.key(0), dtype=jnp.float64).dtype)
print('x64 after', jnp.zeros(1).dtype, jax.config.jax_enable_x64)
@jax.jit
def cached(x):
  return x + 1
print('x64 cache', cached(1.0).dtype)
with jax.enable_x64():
  print('x64 cache in context', cached(1.0).dtype, cached(np.float64(1)).dtype)
print('x64 cache after', cached(1.0).dtype)
