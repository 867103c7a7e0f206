import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
else:
  import jax, jax.numpy as jnp
  from jax import lax
m=jnp.arange(12.).reshape(3,4); v=jnp.arange(5.)
I=jnp.array([0, 5, -1, -7, 2])
def show(tag, f):
  try:
    out=f()
    print(tag, np.round(np.asarray(out, np.float64), 4).tolist())
  except Exception as e: print(tag, 'ERR', type(e).__name__, str(e)[:80])
for name, g in [
  ('getitem', lambda m, i: m[i].sum()),
  ('getitem2', lambda m, i: m[i, i].sum()),
  ('take', lambda m, i: jnp.take(m, i, axis=1).sum()),
  ('take clip', lambda m, i: jnp.take(m, i, axis=1, mode='clip').sum()),
  ('take wrap', lambda m, i: jnp.take(m, i, axis=0, mode='wrap').sum()),
  ('at get fill', lambda m, i: m.at[i].get(mode='fill', fill_value=0.).sum()),
  ('at set', lambda m, i: (m.at[i].set(7.) * m).sum()),
  ('at add', lambda m, i: (m.at[i, 1].add(m[0, 0]) ** 2).sum()),
  ('at mul', lambda m, i: (m.at[i].multiply(3.)).sum()),
  ('at min', lambda m, i: (m.at[i].min(2.) * m).sum()),
  ('dyn slice in dim', lambda m, i: lax.dynamic_slice_in_dim(m, i, 2, axis=1).sum()),
  ('dyn index', lambda m, i: lax.dynamic_index_in_dim(m, i, axis=0, keepdims=False).sum()),
  ('dus', lambda m, i: (lax.dynamic_update_slice(m, m[:2, :2] * 2, (i, i)) ** 2).sum()),
  ('take_along', lambda m, i: jnp.take_along_axis(m, jnp.stack([i, i, i])[:, None] % 7 - 2, axis=1).sum()),
  ('slice neg', lambda m, i: lax.dynamic_slice(m, (i, -1), (1, 2)).sum()),
]:
  show(name+' vmap', lambda: jax.vmap(lambda i: g(m, i))(I))
  show(name+' grad vmap', lambda: jax.grad(lambda m: jax.vmap(lambda i: g(m, i))(I).sum())(m))
  show(name+' vmap grad', lambda: jax.vmap(lambda i: jax.grad(g)(m, i))(I))
  show(name+' jit grad', lambda: jax.jit(jax.grad(g))(m, I[1]))
  show(name+' batched m', lambda: jax.grad(lambda mm: jax.vmap(g)(mm, I[:2]).sum())(jnp.stack([m, m + 1])))
