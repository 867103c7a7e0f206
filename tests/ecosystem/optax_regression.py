"""optax: a two-layer network fitted to a sine by Adam with gradient clipping, 60 jitted steps."""
import jax
import jax.numpy as jnp
import numpy as np
import optax

from _report import report

rng = np.random.RandomState(0)
x = rng.uniform(-2, 2, (64, 1)).astype(np.float32)
y = np.sin(2 * x).astype(np.float32) + 0.5
params = {"w1": jnp.asarray(rng.normal(0, 1, (1, 16)).astype(np.float32)),
          "b1": jnp.asarray(rng.normal(0, 1, 16).astype(np.float32)),
          "w2": jnp.asarray(rng.normal(0, 0.3, (16, 1)).astype(np.float32)),
          "b2": jnp.zeros(1)}


def loss_fn(p, x, y):
  h = jnp.tanh(x @ p["w1"] + p["b1"])
  return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)


opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(optax.exponential_decay(0.05, 20, 0.5)))
state = opt.init(params)


@jax.jit
def step(params, state):
  loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
  updates, state = opt.update(grads, state, params)
  return optax.apply_updates(params, updates), state, loss


losses = []
for _ in range(60):
  params, state, loss = step(params, state)
  losses.append(loss)
report(final_loss=loss, first_loss=losses[0], w2=params["w2"][:4, 0],
       global_norm=optax.global_norm(params))
