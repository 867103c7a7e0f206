import sys
import numpy as np
if sys.argv[1] == 'm':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
else:
  import jax, jax.numpy as jnp
  from jax import lax
jax.config.update('jax_enable_x64', True)
from jaxlib.cpu import _lapack
_lapack.initialize()
def show(n, f):
  try:
    out = f()
    print(n, jax.tree_util.tree_map(lambda a: np.round(np.asarray(a, np.float64), 4).tolist(), out))
  except Exception as e: print(n, 'ERR', type(e).__name__)
rs = np.random.RandomState(0)
a = rs.randn(3, 4, 3).astype(np.float32)
def geqrf(x, **kw):
  nd = x.ndim
  m2m = tuple(range(nd - 2)) + (nd - 1, nd - 2)
  outs = [jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct(x.shape[:-2] + (min(*x.shape[-2:]),), x.dtype)]
  return jax.ffi.ffi_call('lapack_sgeqrf_ffi', outs, input_output_aliases={0: 0}, input_layouts=[m2m], output_layouts=[m2m, None], **kw)(x)
show('ffi geqrf', lambda: geqrf(a))
show('ffi geqrf jit', lambda: jax.jit(geqrf)(a))
for m in ['sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', 'legacy_vectorized', None]:
  show(f'ffi vmap {m}', lambda: jax.vmap(lambda x: geqrf(x, vmap_method=m))(a))
show('ffi grad', lambda: jax.grad(lambda x: geqrf(x)[0].sum())(a))
s = a[0] @ a[0].T + 4 * np.eye(4, dtype=np.float32)
potrf = lambda x, **kw: jax.ffi.ffi_call('lapack_spotrf_ffi', (jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct((), np.int32)), input_layouts=[(1, 0)], output_layouts=[(1, 0), None])(x, **kw)
show('ffi attribute', lambda: potrf(s, uplo=np.uint8(ord('L'))))
show('ffi unhashable attribute', lambda: potrf(s, uplo=[1]))
show('ffi bad vmap_method', lambda: jax.ffi.ffi_call('t', jax.ShapeDtypeStruct((), np.float32), vmap_method='x'))
show('ffi bad alias', lambda: jax.ffi.ffi_call('t', jax.ShapeDtypeStruct((3,), np.float32), input_output_aliases={0: 0})(np.zeros(2, np.float32)))
show('ffi no such target', lambda: jax.ffi.ffi_call('no_such_target', jax.ShapeDtypeStruct((), np.float32))(np.float32(1)))
for shape in [(4, 3), (3, 5), (2, 4, 3)]:
  b = rs.randn(*shape)
  show(f'qr raw {shape}', lambda: jnp.linalg.qr(b, mode='raw'))
  show(f'qr pivoting {shape}', lambda: lax.linalg.qr(b, pivoting=True)[2])
  show(f'qr pivoting reduced {shape}', lambda: lax.linalg.qr(b, pivoting=True, full_matrices=False)[1])
show('scipy qr r pivoting', lambda: jax.scipy.linalg.qr(rs.randn(3, 4), mode='r', pivoting=True))
x = np.arange(6).reshape(2, 3)
show('insert indices', lambda: jnp.insert(np.arange(5), np.array([4, 2, 5]), np.array([10, 11, 12])))
show('insert column', lambda: jnp.insert(x, 1, np.array([7, 8]), axis=1))
show('insert columns', lambda: jnp.insert(x, np.array([1, 3]), np.array([[10, 11], [12, 13]]), axis=1))
show('insert slice', lambda: jnp.insert(x, slice(0, 2), 5, axis=0))
show('insert traced', lambda: jax.jit(lambda i: jnp.insert(jnp.arange(4), i, 9))(2))
show('insert 2-d index', lambda: jnp.insert(x, np.array([[1]]), 1))
show('insert float index', lambda: jnp.insert(x, np.array([1.5]), 1))
show('insert list', lambda: jnp.insert(x, [1], 1))
