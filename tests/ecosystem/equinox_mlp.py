"""equinox: an eqx.nn.MLP fitted by filter_jit / filter_grad steps of plain SGD."""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from _report import report

rng = np.random.RandomState(0)
x = rng.uniform(-1, 1, (32, 2)).astype(np.float32)
y = (np.sin(3 * x[:, :1]) * x[:, 1:]).astype(np.float32)
model = eqx.nn.MLP(2, 1, width_size=16, depth=2, activation=jax.nn.tanh,
                   key=jax.random.PRNGKey(0))


@eqx.filter_grad
def grads_of(model, x, y):
  return jnp.mean((jax.vmap(model)(x) - y) ** 2)


@eqx.filter_jit
def step(model, x, y):
  grads = grads_of(model, x, y)
  return eqx.apply_updates(model, jax.tree_util.tree_map(lambda g: -0.1 * g, grads))


@eqx.filter_jit
def loss(model, x, y):
  return jnp.mean((jax.vmap(model)(x) - y) ** 2)


first = loss(model, x, y)
for _ in range(30):
  model = step(model, x, y)
report(first_loss=first, final_loss=loss(model, x, y), out=model(x[0]),
       w0=model.layers[0].weight[0])
