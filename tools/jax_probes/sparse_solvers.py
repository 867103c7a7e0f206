import sys, numpy as np, scipy.sparse.linalg as ssl
if sys.argv[1]=='m':
  import minijax as jax, minijax.scipy.sparse.linalg as sl, minijax.numpy as jnp
else:
  import jax, jax.scipy.sparse.linalg as sl, jax.numpy as jnp
jax.config.update('jax_enable_x64', True)
rng=np.random.RandomState(0)
n=8
Q=rng.randn(n,n); spd=Q@Q.T+n*np.eye(n); gen=rng.randn(n,n)+n*np.eye(n)
b=rng.randn(n); bc=b+1j*rng.randn(n); genc=gen+1j*rng.randn(n,n)
def show(tag, x, ref):
  x=np.asarray(x); print(tag, x.dtype, float(np.abs(x-ref).max()) < 1e-4, round(float(np.linalg.norm(x-ref)), 9))
for name, A in [('cg',spd),('bicgstab',gen),('gmres',gen)]:
  f=getattr(sl,name)
  ref=np.linalg.solve(A,b)
  x,info=f(A,b,tol=1e-10); show(name, x, ref); print(' info', info)
  x,_=f(lambda v: jnp.dot(A,v), b, tol=1e-10, M=np.diag(1/np.diag(A))); show(name+' M', x, ref)
  x,_=jax.jit(lambda b: f(A,b,tol=1e-10))(b); show(name+' jit', x, ref)
  x,_=f(A,b,maxiter=2); print(name, 'maxiter2', np.round(np.asarray(x),4)[:3])
  tree={'a':b[:3],'b':b[3:].reshape(1,5)}
  x,_=f(lambda t: {'a':A[:3,:3]@t['a']+A[:3,3:]@t['b'][0], 'b':(A[3:,:3]@t['a']+A[3:,3:]@t['b'][0])[None]}, tree, tol=1e-10)
  show(name+' tree', np.concatenate([x['a'],x['b'][0]]), ref)
  xs,_=jax.vmap(lambda b: f(A,b,tol=1e-10))(np.stack([b,2*b])); show(name+' vmap', xs[1], 2*ref)
  g=jax.grad(lambda b: f(A,b,tol=1e-10)[0].sum())(b); show(name+' grad b', g, np.linalg.solve(A.T, np.ones(n)))
  if name!='cg':
    x,_=f(genc if name!='cg' else spd, bc, tol=1e-10); show(name+' complex', x, np.linalg.solve(genc,bc))
x,_=sl.gmres(gen,b,tol=1e-10,solve_method='incremental',restart=3); show('gmres inc r3', x, np.linalg.solve(gen,b))
x,_=sl.gmres(gen,b,tol=1e-10,restart=3); show('gmres batched r3', x, np.linalg.solve(gen,b))
x,_=sl.cg(spd+0j,bc,tol=1e-10); show('cg complex', x, np.linalg.solve(spd,bc))
x,info=sl.gmres(np.eye(3), np.zeros(3)); print('zero b', np.asarray(x), info)
x,_=sl.cg(spd,b.astype(np.float32)); print(np.asarray(x).dtype)
for bad in [lambda: sl.cg(np.ones((2,3)), np.ones(2)), lambda: sl.cg(spd, b, x0=b[:3]), lambda: sl.gmres(spd,b,solve_method='x')]:
  try: bad()
  except Exception as e: print(type(e).__name__, str(e)[:100])
