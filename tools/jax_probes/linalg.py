import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  import minijax.scipy.linalg as sl
else:
  import jax, jax.numpy as jnp
  import jax.scipy.linalg as sl
jax.config.update('jax_enable_x64', True)
L = jnp.linalg
r = np.random.RandomState(0)
a = jnp.array(r.randn(4, 4)); s = a @ a.T + 4 * jnp.eye(4); b = jnp.array(r.randn(4, 2)); w = jnp.array(r.randn(3, 5))
def show(n, f):
  try:
    out = f()
    print(n, jax.tree_util.tree_map(lambda x: (np.asarray(x).dtype.name, np.shape(x), np.round(np.abs(np.asarray(x)).sum(), 6)), out))
  except Exception as e: print(n, 'ERR', type(e).__name__, str(e).split('\n')[0][:100])
show('det', lambda: L.det(a)); show('slogdet', lambda: L.slogdet(a)); show('inv', lambda: L.inv(a)); show('solve', lambda: L.solve(a, b))
show('solve vec', lambda: L.solve(a, b[:, 0])); show('lstsq', lambda: L.lstsq(w, jnp.ones(3))); show('pinv', lambda: L.pinv(w))
show('matrix_rank', lambda: L.matrix_rank(w)); show('norm', lambda: [L.norm(a, o) for o in (None, 'fro', 'nuc', 1, 2, -2, jnp.inf)])
show('vector_norm', lambda: L.vector_norm(a, ord=3, axis=1)); show('matrix_norm', lambda: L.matrix_norm(a, ord='nuc'))
show('cond', lambda: L.cond(a)); show('eigh', lambda: L.eigh(s)[0]); show('eigvalsh', lambda: L.eigvalsh(s, UPLO='U'))
show('svdvals', lambda: L.svdvals(w)); show('qr r', lambda: L.qr(w, mode='r')); show('qr complete', lambda: [x.shape for x in L.qr(w.T, mode='complete')])
show('cholesky', lambda: L.cholesky(s, upper=True)); show('matrix_power', lambda: L.matrix_power(a, -3)); show('multi_dot', lambda: L.multi_dot([w.T, w, w.T]))
show('tensorsolve', lambda: L.tensorsolve(jnp.eye(6).reshape(2, 3, 6), jnp.ones((2, 3)))); show('tensorinv', lambda: L.tensorinv(jnp.eye(6).reshape(2, 3, 6), ind=2))
show('eig', lambda: jnp.sort_complex(L.eigvals(a))); show('trace', lambda: L.trace(a, offset=1)); show('diagonal', lambda: L.diagonal(a, offset=-1))
show('outer', lambda: L.outer(a[0], a[1])); show('cross', lambda: L.cross(a[:, :3], a[:, 1:])); show('vecdot', lambda: L.vecdot(a, a, axis=0))
show('grad det', lambda: jax.grad(L.det)(a)); show('grad slogdet', lambda: jax.grad(lambda m: L.slogdet(m)[1])(a)); show('grad inv', lambda: jax.grad(lambda m: L.inv(m).sum())(a))
show('grad eigh', lambda: jax.grad(lambda m: L.eigh(m)[0].sum() + L.eigh(m)[1][0, 0] ** 2)(s)); show('grad svd', lambda: jax.grad(lambda m: L.svd(m, compute_uv=False).sum())(w))
show('grad pinv', lambda: jax.grad(lambda m: L.pinv(m).sum())(w)); show('grad norm2', lambda: jax.grad(lambda m: L.norm(m, 2))(a)); show('grad cholesky', lambda: jax.grad(lambda m: L.cholesky(m).sum())(s))
show('grad qr', lambda: jax.grad(lambda m: L.qr(m)[1].sum())(w.T)); show('grad lstsq', lambda: jax.grad(lambda m: L.lstsq(m, jnp.ones(3))[0].sum())(w))
show('expm', lambda: sl.expm(a / 4)); show('logm?', lambda: sl.expm_frechet(a / 4, b @ b.T / 4)[1]); show('lu', lambda: sl.lu(a)); show('lu_factor', lambda: sl.lu_factor(a))
show('lu_solve', lambda: sl.lu_solve(sl.lu_factor(a), b)); show('cho_solve', lambda: sl.cho_solve(sl.cho_factor(s), b)); show('solve_triangular', lambda: sl.solve_triangular(jnp.triu(a), b, trans=1, unit_diagonal=True))
show('svd', lambda: sl.svd(w, full_matrices=False)[1]); show('eigh gen', lambda: sl.eigh(s, eigvals_only=True)); show('schur', lambda: sl.schur(s)[0].sum())
show('block_diag', lambda: sl.block_diag(a[:2, :2], jnp.ones((1, 3)))); show('toeplitz', lambda: sl.toeplitz(a[0])); show('polar', lambda: sl.polar(a)[1]); show('sqrtm', lambda: jnp.real(sl.sqrtm(s)))
show('det batch', lambda: L.det(jnp.stack([a, s]))); show('solve batch', lambda: L.solve(jnp.stack([a, s]), jnp.stack([b, b])))
show('vmap det', lambda: jax.vmap(L.det)(jnp.stack([a, s]))); show('jacfwd inv', lambda: jax.jacfwd(L.inv)(s).shape)
show('det singular', lambda: L.det(jnp.ones((3, 3)))); show('inv singular', lambda: L.inv(jnp.ones((2, 2))))
show('cholesky notpd', lambda: L.cholesky(-s)); show('slogdet singular', lambda: L.slogdet(jnp.zeros((2, 2))))
