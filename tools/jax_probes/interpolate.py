import sys, numpy as np, scipy.interpolate as si
if sys.argv[1]=='m':
  import minijax as jax, minijax.scipy.interpolate as ip, minijax.numpy as jnp
else:
  import jax, jax.scipy.interpolate as ip, jax.numpy as jnp
jax.config.update('jax_enable_x64', True)
rng=np.random.RandomState(0)
g=(np.sort(rng.rand(5)), np.sort(rng.rand(4))*3)
v=rng.randn(5,4,2)
q=np.stack([rng.uniform(g[0][0]-0.05,g[0][-1]+0.05,9), rng.uniform(g[1][0]-0.1,g[1][-1]+0.1,9)],-1)
for method in ['linear','nearest']:
  for fill in [np.nan, None, 1.5]:
    r=ip.RegularGridInterpolator(g,v,method=method,fill_value=fill)
    out=np.asarray(r(q)); ref=si.RegularGridInterpolator(g,v,method=method,fill_value=fill,bounds_error=False)(q)
    print(method, fill, out.shape, np.nanmax(np.abs(out-ref)), np.isnan(out).sum(), np.isnan(ref).sum())
r=ip.RegularGridInterpolator(g,v[...,0])
print(np.asarray(r((q[:,0].reshape(3,3), q[:,1].reshape(3,3)))).round(6).tolist())
print(np.asarray(jax.jit(lambda r, q: r(q))(r, q)).round(6).tolist())
print(np.asarray(r(q.ravel())).round(6).tolist())
print(np.asarray(jax.grad(lambda q: r(q).sum())(q[:3])).round(6).tolist())
