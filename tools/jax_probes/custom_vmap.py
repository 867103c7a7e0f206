import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax.custom_batching import custom_vmap, sequential_vmap
else:
  import jax, jax.numpy as jnp
  from jax.custom_batching import custom_vmap, sequential_vmap
calls=[]
@custom_vmap
def f(x, y):
  return jnp.sin(x) * y
@f.def_vmap
def rule(axis_size, in_batched, x, y):
  calls.append((axis_size, in_batched))
  xb, yb = in_batched
  return jnp.cos(x) * y, xb or yb
x=np.arange(3.); y=np.float32(2.)
def show(tag, v):
  print(tag, jax.tree_util.tree_map(lambda a: np.round(np.asarray(a,np.float64),6).tolist(), v), calls); calls.clear()
try: show('eager', f(1.0, 2.0))
except Exception as e: print('eager', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('jit', jax.jit(f)(1.0, 2.0))
except Exception as e: print('jit', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('vmap', jax.vmap(f, (0, None))(x, y))
except Exception as e: print('vmap', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('vmap both', jax.vmap(f)(x, x))
except Exception as e: print('vmap both', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('jit vmap', jax.jit(jax.vmap(f, (0, None)))(x, y))
except Exception as e: print('jit vmap', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('grad', jax.grad(f)(1.0, 2.0))
except Exception as e: print('grad', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('vmap grad', jax.vmap(jax.grad(f), (0, None))(x, y))
except Exception as e: print('vmap grad', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('grad sum vmap', jax.grad(lambda x: jax.vmap(f, (0, None))(x, y).sum())(x))
except Exception as e: print('grad sum vmap', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('jvp vmap', jax.jvp(jax.vmap(f, (0, None)), (x, y), (np.ones(3), np.float32(0.))))
except Exception as e: print('jvp vmap', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('vmap jvp', jax.vmap(lambda x: jax.jvp(f, (x, y), (1.0, 0.0)))(x))
except Exception as e: print('vmap jvp', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('vmap vmap', jax.vmap(jax.vmap(f, (0, None)), (0, None))(np.ones((2,3)), y))
except Exception as e: print('vmap vmap', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('seq', jax.vmap(sequential_vmap(lambda a, b: a * b + 1), (0, None))(x, y))
except Exception as e: print('seq', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
try: show('seq2', jax.vmap(sequential_vmap(lambda a: (a, a * 2)))(x))
except Exception as e: print('seq2', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
@custom_vmap
def g(x): return (x, x+1)
@g.def_vmap
def grule(n, b, x): return (x * 10, x), True
try: show('prefix', jax.vmap(g)(x))
except Exception as e: print('prefix', 'ERR', type(e).__name__, str(e).split(chr(10))[0][:150]); calls.clear()
@custom_vmap
def h(x): return x
@h.def_vmap
def hrule(n, b, x): return x, (True,)
try: show('bad', jax.vmap(h)(x))
except Exception as e: print('bad', type(e).__name__, str(e)[:300])
@custom_vmap
def k(x): return x
try: jax.vmap(k)(x)
except Exception as e: print('norule', type(e).__name__, str(e)[:200])
def closure(c):
  @custom_vmap
  def q(x): return x * c
  @q.def_vmap
  def qr(n, b, x): return x * c, b[0]
  return q(1.0)
try: show('closure', jax.vmap(closure)(x))
except Exception as e: print('closure', type(e).__name__, str(e)[:200])
print(jax.make_jaxpr(f)(1.0, 2.0))
