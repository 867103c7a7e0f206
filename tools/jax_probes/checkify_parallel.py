import sys, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
  from minijax.experimental import checkify
  from minijax.sharding import PartitionSpec as P
else:
  import jax, jax.numpy as jnp
  from jax import lax
  from jax.experimental import checkify
  from jax.sharding import PartitionSpec as P
def run(tag, f, *args, errors=checkify.all_checks):
  try:
    err, out = checkify.checkify(f, errors=errors)(*args)
    s = err.get()
    print(tag, '|', None if s is None else s.replace('\n', ' ')[:200], '|', np.round(np.asarray(out, np.float64), 3).tolist())
  except Exception as e: print(tag, '| EXC', type(e).__name__, str(e).split('\n')[0][:150])
mesh = jax.make_mesh((4,), ('i',), axis_types=(jax.sharding.AxisType.Auto,))
x = jnp.arange(4.)
run('pmap div', jax.pmap(lambda v: v / (v - 2)), x)
run('pmap user', jax.pmap(lambda v: (checkify.check(v < 2, 'v={v}', v=v), v)[1]), x)
run('pmap oob', jax.pmap(lambda v: jnp.arange(3.)[v.astype(int) + 1]), x)
run('shard_map nan', jax.shard_map(lambda b: jnp.log(b - 1), mesh=mesh, in_specs=P('i'), out_specs=P('i')), x)
run('shard_map user', jax.shard_map(lambda b: (checkify.check(b[0] < 3, 'b={b}', b=b[0]), b)[1], mesh=mesh, in_specs=P('i'), out_specs=P('i')), x)
run('jit shard_map', jax.jit(jax.shard_map(lambda b: b / (b - 1), mesh=mesh, in_specs=P('i'), out_specs=P('i'))), x)
run('checkify jit pmap', lambda v: jax.jit(jax.pmap(lambda u: u / 0))(v), x)
