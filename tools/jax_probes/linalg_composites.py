import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.lax.linalg as ll
  from minijax.lax.linalg import qr as _
  geqrf = None
else:
  import jax, jax.lax.linalg as ll
  import jax._src.lax.linalg as L; geqrf = L.geqrf
jax.config.update('jax_enable_x64', True)
r=np.random.RandomState(0); a=r.randn(4,3); c=r.randn(4,4); w=r.randn(4)
p=lambda t,x: print(t, np.round(np.asarray(x),9).tolist())
p('sp', ll.symmetric_product(a, c, alpha=2., beta=0.5)); p('sps', ll.symmetric_product(a, c, alpha=2., beta=0.5, symmetrize_output=True))
R=np.linalg.cholesky(c@c.T+4*np.eye(4)).T
p('cu', np.triu(np.asarray(ll.cholesky_update(R, w))))
import scipy.linalg as sl
for shape in [(4,3),(4,4),(3,5)]:
  x=r.randn(*shape)
  qr_, taus = sl.lapack.dgeqrf(x)[:2]
  m=shape[0]
  for left in [True, False]:
    for tr in [False, True]:
      cc = r.randn(m, 2) if left else r.randn(2, m)
      p(f'ormqr{shape}{left}{tr}', ll.ormqr(qr_, taus, cc, left=left, transpose=tr))
