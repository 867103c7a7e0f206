import sys, zlib
import numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
  from minijax.scipy import fft as sfft
else:
  import jax, jax.numpy as jnp
  from jax import lax
  from jax.scipy import fft as sfft
def show(n, f):
  try: print(n, f())
  except Exception as e: print(n, 'ERR', type(e).__name__, str(e).split('\n')[0][:120])
def info(d):
  return None if d is None else (d.traced_for, d.func_name, d.arg_names, d.result_paths)
def nested(closed):
  out = []
  for e in closed.jaxpr.eqns:
    for k, v in sorted(e.params.items()):
      for x in (v if isinstance(v, (tuple, list)) else [v]):
        if type(x).__name__ in ('ClosedJaxpr', 'Jaxpr'):  # (the primitive names differ: remat2)
          out.append((k, info(getattr(x, 'jaxpr', x).debug_info)))
  return out
def body(c, a): return c + a, c * a
def cond(c): return c[0] < 3.
def step(c): return c[0] + 1., c[1]
def loop(i, c): return c * 2.
@jax.custom_jvp
def cj(x, y): return x * y
cj.defjvp(lambda p, t: (p[0] * p[1], t[0] * p[1]))
def f(x, ys, *rest, scale=1., **kw):
  c, zs = lax.scan(body, x, ys)
  w = lax.while_loop(cond, step, (c, x))
  b = lax.cond(x > 0, jnp.sin, jnp.cos, x)
  s = lax.switch(1, [jnp.sin, jnp.cos], x)
  r = jax.checkpoint(lambda q: jnp.sin(q))(x)
  l = lax.fori_loop(0, 3, loop, x)
  return {'c': c, 'zs': zs, 'w': w, 'b': (b, s, r, l, cj(x, scale))}
closed = jax.make_jaxpr(f)(1., jnp.ones(3), 2., scale=3., extra=4.)
show('top', lambda: info(closed.jaxpr.debug_info))
for i, line in enumerate(nested(closed)): show(f'nested {i}', lambda: line)
show('jit static', lambda: info(jax.jit(lambda n, x: x * n, static_argnums=0).trace(2, 1.).jaxpr.jaxpr.debug_info))
show('grad', lambda: info(jax.make_jaxpr(jax.grad(lambda x, y: jnp.sin(x) * y))(1., 2.).jaxpr.debug_info))
show('func_src_info', lambda: closed.jaxpr.debug_info.func_src_info.split('/')[-1])
text = jax.jit(lambda x, p: {'o': x * p['w']}).lower(1., {'w': 2.}).as_text(debug_info=True)
show('arg locs', lambda: [l.strip()[:150] for l in text.splitlines() if 'func.func public' in l])
g = jax.jit(lambda x, y: {'p': x @ y, 't': x.sum()})
traced = g.trace(jnp.ones((2, 3)), jnp.ones((3, 4)))
compiled = traced.lower().compile()
show('out_info traced', lambda: traced.out_info)
show('out_info lowered', lambda: traced.lower().out_info)
show('out_info compiled', lambda: compiled.out_info)
show('input_shardings', lambda: compiled.input_shardings)
show('output_shardings', lambda: compiled.output_shardings)
show('input_formats', lambda: compiled.input_formats)
show('output_formats', lambda: compiled.output_formats)
show('weak eval_shape', lambda: jax.eval_shape(lambda x: x * 2, 1.))
show('sds eq', lambda: jax.ShapeDtypeStruct((2,), jnp.float32) == jax.ShapeDtypeStruct((2,), jnp.float32, weak_type=True))
def first_line(fn, x):
  try: jax.jit(fn)(x); return 'ok'
  except Exception as e: return type(e).__name__ + ': ' + str(e).split('\n')[0]
for name, fn in [('bool', lambda v: bool(v)), ('float', lambda v: float(v)), ('tolist', lambda v: v.tolist()),
                 ('index', lambda v: [1, 2][v.astype(jnp.int32)]), ('array', lambda v: np.asarray(v))]:
  show(f'error {name}', lambda: first_line(fn, jnp.float32(1.)))
def origin(fn, *args):
  try: jax.jit(fn)(*args)
  except Exception as e: return [l for l in str(e).split('\n') if 'depends on' in l][0].split('. ')[-1]
show('origin binary', lambda: origin(lambda x, y, z: x if x > z else y, 1., 2., 3.))
show('origin pytree', lambda: origin(lambda xy, z: xy[0] if xy[1] > 0 else z, (1., 2.), 3.))
show('round', lambda: repr(round(jnp.array([1.5, 2.5, 2.567]))))
show('round 1', lambda: repr(round(jnp.float32(2.567), 1)))
x16 = np.linspace(-3, 3, 2001).astype(np.float16)
show('jnp.round f16', lambda: zlib.crc32(np.asarray(jnp.round(x16, 2)).tobytes()))
x = np.random.default_rng(1).normal(size=(4, 5, 6)).astype(np.float32)
for norm in (None, 'ortho'):
  show(f'dct {norm}', lambda: zlib.crc32(np.asarray(sfft.dct(x, norm=norm)).tobytes()))
  show(f'idct {norm}', lambda: zlib.crc32(np.asarray(sfft.idct(x, n=7, axis=1, norm=norm)).tobytes()))
  show(f'dctn {norm}', lambda: zlib.crc32(np.asarray(sfft.dctn(x, norm=norm)).tobytes()))
  show(f'idctn {norm}', lambda: zlib.crc32(np.asarray(sfft.idctn(x, s=(2, 4), axes=(0, 1), norm=norm)).tobytes()))
show('dot_general jaxpr', lambda: str(jax.make_jaxpr(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))(jnp.ones((2, 3)), jnp.ones((3, 4)))).split('\n')[1].strip())
