import sys, numpy as np, zlib
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax.nn import initializers as init
else:
  import jax, jax.numpy as jnp
  from jax.nn import initializers as init

def show(v):
  a = np.asarray(v)
  return f"{a.dtype}{list(a.shape)} crc={zlib.crc32(a.tobytes()):08x} " + ",".join(f"{x:.5g}" for x in a.ravel()[:4])

def case(name, fn):
  try:
    print(name, show(fn()))
  except Exception as e:
    print(name, 'raises', type(e).__name__, str(e).splitlines()[0][:150] if str(e) else '')

key = jax.random.key(42)
for name in ['zeros', 'ones']:
  case(name, lambda: getattr(init, name)(key, (2, 3), jnp.float32))
for name in ['glorot_uniform', 'glorot_normal', 'lecun_uniform', 'lecun_normal', 'he_uniform', 'he_normal',
             'xavier_uniform', 'xavier_normal', 'kaiming_uniform', 'kaiming_normal']:
  for shape in [(4, 5), (3, 3, 4, 6), (7,)]:
    for dtype in [jnp.float32, jnp.bfloat16, jnp.float16]:
      case(f'{name} {shape} {jnp.dtype(dtype).name}', lambda: getattr(init, name)()(key, shape, dtype))
  case(f'{name} complex', lambda: getattr(init, name)()(key, (4, 5), jnp.complex64))
  case(f'{name} in_axis', lambda: getattr(init, name)(in_axis=0, out_axis=1)(key, (4, 5, 3)))
  case(f'{name} batch_axis', lambda: getattr(init, name)(batch_axis=0)(key, (2, 4, 5)))
for dist in ['truncated_normal', 'normal', 'uniform']:
  for mode in ['fan_in', 'fan_out', 'fan_avg', 'fan_geo']:
    case(f'variance_scaling {dist} {mode}', lambda: init.variance_scaling(2.0, mode, dist)(key, (6, 8)))
case('variance_scaling bad', lambda: init.variance_scaling(1.0, 'fan_x', 'normal')(key, (2, 2)))
case('variance_scaling bad dist', lambda: init.variance_scaling(1.0, 'fan_in', 'cauchy')(key, (2, 2)))
case('normal', lambda: init.normal(0.5)(key, (3, 4)))
case('uniform', lambda: init.uniform(2.0)(key, (3, 4)))
case('truncated_normal', lambda: init.truncated_normal(0.5, lower=-1.0, upper=3.0)(key, (3, 4)))
case('constant', lambda: init.constant(3.5)(key, (2, 2), jnp.int32))
case('orthogonal', lambda: init.orthogonal()(key, (4, 6)))
case('orthogonal tall', lambda: init.orthogonal(scale=2.0, column_axis=0)(key, (6, 4, 2)))
case('delta_orthogonal', lambda: init.delta_orthogonal()(key, (3, 3, 4, 4)))
case('delta_orthogonal 1d', lambda: init.delta_orthogonal()(key, (3, 4, 4)))
case('delta_orthogonal bad', lambda: init.delta_orthogonal()(key, (3, 3, 5, 4)))
case('orthogonal 1d', lambda: init.orthogonal()(key, (4,)))
case('raw key', lambda: init.glorot_normal()(jax.random.PRNGKey(0), (3, 3)))
case('int dtype', lambda: init.glorot_normal()(key, (3, 3), jnp.int32))
