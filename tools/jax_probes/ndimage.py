import sys, numpy as np, scipy.ndimage as snd
if sys.argv[1]=='m':
  import minijax as jax, minijax.scipy.ndimage as nd
else:
  import jax, jax.scipy.ndimage as nd
jax.config.update('jax_enable_x64', True)
rng=np.random.RandomState(0)
worst=0
for dtype in [np.float64, np.float32, np.int32]:
 for shape in [(5,), (4,3), (1,4), (3,2,4)]:
  x=(rng.randn(*shape)*10).astype(dtype)
  c=[rng.uniform(-3, s+3, size=(7,)) for s in shape]
  c[0][0]=1.5; c[0][1]=-0.5
  for order in [0,1]:
   for mode in ['constant','nearest','wrap','mirror','reflect']:
    out=np.asarray(nd.map_coordinates(x,c,order,mode=mode,cval=2.5))
    smode={'constant':'grid-constant','wrap':'grid-wrap'}.get(mode,mode)
    ref=snd.map_coordinates(x,np.array(c),order=order,mode=smode,cval=2.5)
    if order==0 and dtype!=np.int32: pass
    err=np.abs(out.astype(float)-ref).max()
    print(dtype.__name__, shape, order, mode, out.dtype, round(float(err),5), round(float(np.asarray(out).sum()), 9))
