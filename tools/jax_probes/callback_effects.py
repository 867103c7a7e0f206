import sys, numpy as np, functools
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
  from minijax.experimental import io_callback
else:
  import jax, jax.numpy as jnp
  from jax import lax
  from jax.experimental import io_callback
log=[]
def rec(tag):
  def f(*a):
    log.append((tag, [np.asarray(x).tolist() for x in a]))
    return np.asarray(a[0]) if a else None
  return f
def run(tag, f, *args):
  log.clear()
  try:
    out = f(*args); jax.block_until_ready(out); jax.effects_barrier()
    print(tag, log, np.round(np.asarray(jax.tree_util.tree_leaves(out)[0], np.float64), 4).tolist() if jax.tree_util.tree_leaves(out) else None)
  except Exception as e: print(tag, 'ERR', type(e).__name__, str(e).split('\n')[0][:120])
x = jnp.arange(3.)
def dbg(tag, v): jax.debug.callback(rec(tag), v, ordered=True)
def io(tag, v): return io_callback(rec(tag), jax.ShapeDtypeStruct(v.shape, v.dtype), v, ordered=True)
run('scan', jax.jit(lambda x: lax.scan(lambda c, a: (dbg('s', a), (c + a, a))[1], 0., x)), x)
run('while', jax.jit(lambda x: lax.while_loop(lambda c: c < 3, lambda c: (dbg('w', c), c + 1)[1], 0)), x)
run('cond', jax.jit(lambda x: lax.cond(x[0] < 1, lambda v: (dbg('t', v), v)[1], lambda v: (dbg('f', v), v)[1], x)), x)
run('io scan', jax.jit(lambda x: lax.scan(lambda c, a: (c + io('i', a), None), 0., x)[0]), x)
run('vmap dbg', jax.vmap(lambda v: (jax.debug.callback(rec('v'), v), v)[1]), x)
run('vmap io unordered', jax.vmap(lambda v: io_callback(rec('u'), jax.ShapeDtypeStruct((), v.dtype), v)), x)
run('vmap io ordered', jax.vmap(lambda v: io('o', v)), x)
run('grad dbg', jax.grad(lambda v: (dbg('g', v), v ** 2)[1]), 3.)
run('grad io', jax.grad(lambda v: io('gi', v) * v), 3.)
run('jvp dbg', lambda v: jax.jvp(lambda v: (dbg('j', v), v * 2)[1], (v,), (1.,)), 3.)
run('order', jax.jit(lambda x: (dbg('a', x), io('b', x), dbg('c', x[0]), x)[-1]), x)
run('scan io grad', jax.grad(lambda x: lax.scan(lambda c, a: (c + io('sg', a) * a, None), 0., x)[0]), x)
run('remat dbg', jax.grad(jax.checkpoint(lambda v: (dbg('r', v), jnp.sin(v))[1])), 1.)
run('pure', jax.jit(lambda x: jax.pure_callback(rec('p'), jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2), x)
run('vmap pure', jax.vmap(lambda v: jax.pure_callback(rec('pv'), jax.ShapeDtypeStruct((), v.dtype), v)), x)
run('vmap pure vectorized', jax.vmap(lambda v: jax.pure_callback(rec('pe'), jax.ShapeDtypeStruct((), v.dtype), v, vmap_method='expand_dims')), x)
run('vmap pure broadcast', jax.vmap(lambda v: jax.pure_callback(rec('pb'), jax.ShapeDtypeStruct((), v.dtype), v, vmap_method='broadcast_all')), x)
run('dbg print', jax.jit(lambda x: (jax.debug.print('x={x} s={s}', x=x, s=x.sum()), x)[1]), x)
print(jax.make_jaxpr(lambda x: (dbg('a', x), io('b', x))[1])(x))
