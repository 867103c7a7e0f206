import sys, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import numpy as np
if sys.argv[1] == 'm':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
  from minijax.sharding import Mesh, PartitionSpec as P, NamedSharding
  from minijax.experimental import host_callback as hcb
else:
  import jax, jax.numpy as jnp
  from jax import lax
  from jax.sharding import Mesh, PartitionSpec as P, NamedSharding
  hcb = None
def show(n, f):
  try:
    out = f()
    print(n, jax.tree_util.tree_map(lambda a: np.round(np.asarray(a, np.float64), 4).tolist(), out))
  except Exception as e: print(n, 'ERR', type(e).__name__)
mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ('x', 'y'))
x = jnp.arange(32.).reshape(4, 8)
w = jnp.arange(64.).reshape(8, 8) / 64
def sm(f, i, o, names, **kw):
  return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, axis_names=names, **kw)
show('psum over the manual axis', lambda: jax.jit(sm(lambda a: lax.psum(a * 2, 'x'), P('x'), P(), {'x'}))(x))
show('psum over the other', lambda: jax.jit(sm(lambda a: lax.psum(jnp.sin(a), 'y'), P(None, 'y'), P(), {'y'}))(x))
show('matmul', lambda: jax.jit(sm(lambda a, w: lax.psum(a @ w, 'x'), (P(None, 'x'), P('x', None)), P(), {'x'}))(x, w))
show('axis_index, laid out along the automatic axis', lambda: jax.jit(sm(lambda a: a * lax.axis_index('x'), P('x'), P('x'), {'x'}), in_shardings=NamedSharding(mesh, P('x', 'y')))(x))
show('all_gather varying', lambda: jax.jit(sm(lambda a: lax.all_gather(a, 'x', tiled=True), P('x'), P(), {'x'}))(x))
show('ppermute', lambda: jax.jit(sm(lambda a: lax.ppermute(a, 'y', [(0, 1), (1, 0)]), P(None, 'y'), P(None, 'y'), {'y'}))(x))
show('grad', lambda: jax.jit(jax.grad(lambda x: sm(lambda a: lax.psum((a ** 2).sum(), 'x'), P('x'), P(), {'x'})(x)))(x))
show('vmap', lambda: jax.jit(jax.vmap(sm(lambda a: lax.psum(a, 'x'), P('x'), P(), {'x'})))(x.reshape(2, 4, 4)))
show('eager', lambda: sm(lambda a: lax.pmean(a, 'y') + 1.0, P(None, 'y'), P(), {'y'})(x))
show('scan', lambda: jax.jit(sm(lambda a: lax.scan(lambda c, r: (c + lax.psum(r, 'x'), c), jnp.zeros(a.shape[1:]), a)[0], P('x'), P(), {'x'}))(x))
show('cond', lambda: jax.jit(sm(lambda a: lax.psum(lax.cond(a.sum() > 10, lambda v: v.max(axis=0), lambda v: v.min(axis=0), a), 'x'), P('x'), P(), {'x'}))(x))
show('while', lambda: jax.jit(sm(lambda a: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, lax.pmax(c[1] * 2, 'y')), (0, a))[1], P(None, 'y'), P(None, 'y'), {'y'}, check_vma=False))(x))
show('psum_scatter', lambda: jax.jit(sm(lambda a: lax.psum_scatter(a, 'x', tiled=True), P(None), P('x'), {'x'}))(x))
show('axis_names not in the mesh', lambda: sm(lambda a: a, P('x'), P('x'), {'z'})(x))
show('axis_names a list', lambda: sm(lambda a: a, P('x'), P('x'), ['x'])(x))
show('spec names an automatic axis', lambda: sm(lambda a: a, P('x', 'y'), P('x'), {'x'})(x))
show('psum over an automatic axis', lambda: jax.jit(sm(lambda a: lax.psum(a, 'y'), P('x'), P('x'), {'x'}))(x))
show('io_callback inside', lambda: jax.jit(sm(lambda a: jax.experimental.io_callback(lambda v: v, jax.ShapeDtypeStruct(a.shape, a.dtype), a), P('x'), P('x'), {'x'}))(x))
inner = lambda: jax.shard_map(lambda b: lax.psum(b, 'y') * (1 + lax.axis_index('y')), in_specs=P(None, 'y'), out_specs=P(None, 'y'), axis_names={'y'})
show('nested', lambda: jax.jit(sm(lambda a: lax.psum(inner()(a), 'x'), P('x'), P(), {'x'}))(x))
show('nested psum over both', lambda: jax.jit(sm(lambda a: jax.shard_map(lambda b: lax.psum(b, ('x', 'y')), in_specs=P(None, 'y'), out_specs=P(), axis_names={'y'})(a), P('x'), P(), {'x'}))(x))
show('nested eager', lambda: sm(lambda a: jax.shard_map(lambda b: b * 2 + lax.axis_index('x'), in_specs=P(None, 'y'), out_specs=P(None, 'y'), axis_names={'y'})(a), P('x'), P('x'), {'x'})(x))
seen = []
def called(a):
  jax.debug.callback(lambda s, i: seen.append((float(s), int(i))), a.sum(), lax.axis_index('x'))
  return a * 2
show('debug.callback', lambda: jax.jit(sm(called, P('x'), P('x'), {'x'}))(x[:, :2]))
jax.effects_barrier()
print('debug.callback calls', sorted(seen))
show('in_specs None', lambda: jax.shard_map(lambda b: b, mesh=mesh, in_specs=None, out_specs=P())(x))
