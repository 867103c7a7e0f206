import sys
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
else:
  import jax, jax.numpy as jnp
  from jax import lax
m=jnp.arange(12.).reshape(3,4)
print(jax.grad(lambda m: jax.vmap(lambda i: lax.dynamic_slice(m, (i, 1), (2, 2)))(jnp.array([0, 2])).sum())(m))
print(jax.grad(lambda m: jax.vmap(lambda mm, i: lax.dynamic_slice(mm, (i, 1), (2, 2)))(jnp.stack([m, m]), jnp.array([0, 2])).sum())(m))
print(jax.grad(lambda m: jax.vmap(lambda i: lax.dynamic_update_slice(m, jnp.ones((2,2)), (i, 1)))(jnp.array([0, 2])).sum())(m))
print(jax.vmap(lambda i: lax.dynamic_update_slice(m, jnp.ones((2,2)), (i, 3)))(jnp.array([0, 2])))
print(jax.grad(lambda u: jax.vmap(lambda i: lax.dynamic_update_slice(m, u, (i, 3)))(jnp.array([0, 2])).sum())(jnp.ones((2,2))))
print(jax.vmap(lambda i: x[i] if False else m[i])(jnp.array([0, 5])))
print(jax.grad(lambda m: jax.vmap(lambda i: m[i].sum())(jnp.array([0, 5, -1])).sum())(m))
