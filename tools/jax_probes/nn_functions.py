import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
else:
  import jax, jax.numpy as jnp
nn = jax.nn
rng = np.random.RandomState(0)
x = rng.randn(2, 5).astype(np.float32)
q = rng.randn(2, 4, 3, 8).astype(np.float32); kk = rng.randn(2, 6, 3, 8).astype(np.float32); v = rng.randn(2, 6, 3, 8).astype(np.float32)
def show(n, f):
  try:
    out = f()
    print(n, np.round(np.asarray(out, np.float64), 4).ravel()[:8].tolist(), np.shape(out))
  except Exception as e: print(n, 'ERR', type(e).__name__, str(e)[:100])
for name in ['relu','relu6','sigmoid','softplus','sparse_plus','soft_sign','silu','swish','log_sigmoid','leaky_relu','hard_sigmoid','hard_silu','hard_tanh','elu','celu','selu','gelu','glu','squareplus','mish','identity','sparse_sigmoid','tanh','log1mexp' ]:
  if hasattr(nn, name):
    show(name, lambda: getattr(nn, name)(x if name != 'log1mexp' else -np.abs(x) - 0.1))
    show(name+' grad', lambda: jax.grad(lambda x: getattr(nn, name)(x if name != 'log1mexp' else -jnp.abs(x) - 0.1).sum())(x))
show('softmax', lambda: nn.softmax(x, axis=0)); show('log_softmax', lambda: nn.log_softmax(x, where=x > 0))
show('logsumexp', lambda: nn.logsumexp(x, axis=1, b=2.)); show('standardize', lambda: nn.standardize(x, axis=1))
show('one_hot', lambda: nn.one_hot(jnp.array([0, 2, 5]), 4)); show('gelu approx', lambda: nn.gelu(x, approximate=False))
show('dpa', lambda: nn.dot_product_attention(q, kk, v)); show('dpa causal', lambda: nn.dot_product_attention(q, kk, v, is_causal=True))
show('dpa bias', lambda: nn.dot_product_attention(q, kk, v, bias=jnp.ones((2, 3, 4, 6))))
show('dpa mask', lambda: nn.dot_product_attention(q, kk, v, mask=jnp.tril(jnp.ones((4, 6), bool))))
show('dpa scale', lambda: nn.dot_product_attention(q, kk, v, scale=0.5))
show('dpa seqlen', lambda: nn.dot_product_attention(q, kk, v, query_seq_lengths=jnp.array([2, 4]), key_value_seq_lengths=jnp.array([3, 6])))
show('dpa window', lambda: nn.dot_product_attention(q, kk, v, local_window_size=(1, 1)))
show('dpa gqa', lambda: nn.dot_product_attention(q, kk[:, :, :1], v[:, :, :1]))
show('dpa grad', lambda: jax.grad(lambda q: nn.dot_product_attention(q, kk, v, is_causal=True).sum())(q))
show('dpa 3d', lambda: nn.dot_product_attention(q[0], kk[0], v[0]))
show('dpa return_residual', lambda: nn.dot_product_attention(q, kk, v, return_residual=True)[1] if 'return_residual' in str(jax.nn.dot_product_attention.__code__.co_varnames) else 0)
