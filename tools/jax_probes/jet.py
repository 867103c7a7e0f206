import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp, minijax.lax as lax
  from minijax.experimental.jet import jet
else:
  import jax, jax.numpy as jnp, jax.lax as lax
  from jax.experimental.jet import jet
jax.config.update('jax_enable_x64', True)
rng=np.random.RandomState(0)
x=rng.rand(3)+0.5; y=rng.rand(3)+0.5; K=4
xs=[rng.randn(3) for _ in range(K)]; ys=[rng.randn(3) for _ in range(K)]
W=rng.randn(3,3)
fns={
 'sin': lambda x: jnp.sin(x), 'cos': jnp.cos, 'exp': jnp.exp, 'log': jnp.log, 'tanh': jnp.tanh,
 'logistic': jax.nn.sigmoid, 'sqrt': jnp.sqrt, 'rsqrt': lax.rsqrt, 'pow3': lambda x: x**3, 'powm2': lambda x: x**-2,
 'div': lambda x: 1/x, 'dot': lambda x: jnp.dot(W, x) * x, 'sum': lambda x: jnp.sum(x*x), 'erf': jax.scipy.special.erf,
 'log1p': jnp.log1p, 'expm1': jnp.expm1, 'atan': jnp.arctan, 'softplus': jax.nn.softplus, 'relu': jax.nn.relu,
 'lse': jax.nn.logsumexp, 'jit': jax.jit(lambda x: jnp.sin(x)*x), 'cumsum': lambda x: jnp.cumsum(jnp.exp(x)),
 'max': lambda x: jnp.max(x*x), 'where': lambda x: jnp.where(x>1, x**2, jnp.sin(x)), 'index': lambda x: x[jnp.array([2,0])]*x[1],
 'fori': lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, jnp.ones(3)), 'abs': lambda x: jnp.abs(x-1),
 'pow': lambda x: x ** x, 'gelu': jax.nn.gelu, 'tan': jnp.tan, 'asinh': jnp.arcsinh, 'lgamma': jax.scipy.special.gammaln,
 'reshape': lambda x: jnp.reshape(jnp.outer(x, x), (9,))[::2], 'concat': lambda x: jnp.concatenate([x, jnp.exp(x)]),
 'sort': jnp.sort, 'scan': lambda x: lax.scan(lambda c, a: (c * a, c), 1.0, x)[0], 'cond': lambda x: lax.cond(True, jnp.sin, jnp.cos, x),
 'softmax': jax.nn.softmax, 'norm': jnp.linalg.norm,
}
for name, f in fns.items():
  try:
    p, s = jet(f, (x,), (xs,))
    print(name, np.round(np.asarray(p),6).tolist(), [np.round(np.asarray(t),5).tolist() for t in s])
  except Exception as e: print(name, 'ERR', type(e).__name__, str(e)[:100])
p, s = jet(lambda a, b: a * b + a / b, (x, y), (xs, ys)); print('binary', [np.round(np.asarray(t),5).tolist() for t in s])
p, s = jet(lambda a: (a, {'q': a.sum()}), (x,), (xs[:2],)); print('tree', jax.tree_util.tree_map(lambda t: np.round(np.asarray(t),5).tolist(), s))
