import sys, numpy as np, re
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
else:
  import jax, jax.numpy as jnp
  from jax import lax
import ml_dtypes
rng=np.random.RandomState(0)
for p in lax.DotAlgorithmPreset:
  line=[p.name]
  for dt in [np.float32, ml_dtypes.bfloat16, np.float16]:
    x=rng.randn(3,3).astype(dt); y=rng.randn(3,3).astype(dt)
    try:
      out=jax.jit(lambda a,b: lax.dot(a,b,precision=p))(x,y)
      line.append(f'{np.dtype(dt).name}->{out.dtype}:{np.asarray(out,np.float64).sum():.5f}')
    except Exception as e: line.append('ERR '+str(e)[:70])
  print(*line)
x=rng.randn(3,3).astype(np.float32)
print(jax.grad(lambda a: lax.dot(a,x,precision='F16_F16_F16').sum())(x).dtype)
print(jax.vmap(lambda a: lax.dot(a,x,precision=lax.DotAlgorithmPreset.BF16_BF16_F32))(np.stack([x,x])).shape)
print(jax.make_jaxpr(lambda a: lax.dot(a,a,precision='F16_F16_F16'))(x))
try: jax.jit(lambda a: lax.dot(a,a,precision=lax.DotAlgorithm(np.float32,np.float32,np.float32)))(x)
except Exception as e: print(type(e).__name__, str(e)[:80])
