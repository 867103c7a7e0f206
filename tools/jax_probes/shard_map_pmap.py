import sys, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
  from minijax.sharding import PartitionSpec as P, NamedSharding
  import minijax.sharding as _s; _s.AxisType
  shard_map = jax.shard_map
else:
  import jax, jax.numpy as jnp
  from jax import lax
  from jax.sharding import PartitionSpec as P, NamedSharding
  shard_map = jax.shard_map
def show(n, f):
  try:
    out = f()
    print(n, jax.tree_util.tree_map(lambda a: np.round(np.asarray(a, np.float64), 4).tolist(), out))
  except Exception as e: print(n, 'ERR', type(e).__name__, str(e).split('\n')[0][:120])
AxisType = jax.sharding.AxisType
mesh = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(AxisType.Auto, AxisType.Auto))
x = jnp.arange(16.).reshape(4, 4)
show('psum', lambda: shard_map(lambda b: lax.psum(b, 'x'), mesh=mesh, in_specs=P('x', 'y'), out_specs=P(None, 'y'))(x))
show('all_gather', lambda: shard_map(lambda b: lax.all_gather(b, 'y', tiled=True), mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', None))(x))
show('ppermute', lambda: shard_map(lambda b: lax.ppermute(b, 'x', [(0, 1), (1, 0)]), mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', 'y'))(x))
show('axis_index', lambda: shard_map(lambda b: b * 0 + lax.axis_index('y'), mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', 'y'))(x))
show('psum_scatter', lambda: shard_map(lambda b: lax.psum_scatter(b, 'y', scatter_dimension=1, tiled=True), mesh=mesh, in_specs=P('x', None), out_specs=P('x', 'y'))(x))
show('all_to_all', lambda: shard_map(lambda b: lax.all_to_all(b, 'y', 0, 1, tiled=True), mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', 'y'))(x))
show('pmean grad', lambda: jax.grad(lambda x: shard_map(lambda b: lax.pmean(b ** 2, 'x').sum(), mesh=mesh, in_specs=P('x', 'y'), out_specs=P())(x).sum())(x))
show('jit shard_map', lambda: jax.jit(shard_map(lambda b: b * 2, mesh=mesh, in_specs=P('x'), out_specs=P('x')))(x))
show('vmap shard_map', lambda: jax.vmap(shard_map(lambda b: lax.psum(b, 'x'), mesh=mesh, in_specs=P('x'), out_specs=P()))(jnp.ones((3, 4))))
show('check_vma error', lambda: shard_map(lambda b: b, mesh=mesh, in_specs=P('x'), out_specs=P())(x))
show('pmap', lambda: jax.pmap(lambda v: lax.psum(v, 'i'), axis_name='i')(jnp.arange(4.)))
show('pmap in_axes', lambda: jax.pmap(lambda v, w: v * w, in_axes=(0, None))(jnp.arange(4.), 2.))
show('pmap nested vmap', lambda: jax.pmap(jax.vmap(lambda v: lax.psum(v, 'i'), axis_name='i'), axis_name='j')(jnp.ones((2, 3))))
show('device_put named', lambda: jax.device_put(x, NamedSharding(mesh, P('x', 'y'))).sharding.spec)
show('shards', lambda: [s.index for s in jax.device_put(x, NamedSharding(mesh, P('x', 'y'))).addressable_shards])
show('jit out_shardings', lambda: jax.jit(lambda v: v * 2, out_shardings=NamedSharding(mesh, P('y')))(x).sharding.spec)
show('wsc', lambda: jax.jit(lambda v: lax.with_sharding_constraint(v * 2, NamedSharding(mesh, P(None, 'x'))))(x).sharding.spec)
show('pmax', lambda: shard_map(lambda b: lax.pmax(b, ('x', 'y')), mesh=mesh, in_specs=P('x', 'y'), out_specs=P())(x))
