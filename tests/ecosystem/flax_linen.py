"""flax.linen: an MLP and a small CNN (Conv, BatchNorm, Dropout, pooling) trained by optax
for a few jitted steps on fixed data."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from _report import report


class MLP(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Dense(32)(x))
    x = nn.gelu(nn.Dense(16)(x))
    return nn.Dense(3)(x)


class CNN(nn.Module):
  @nn.compact
  def __call__(self, x, train: bool):
    x = nn.Conv(8, (3, 3))(x)
    x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
    x = nn.relu(x)
    x = nn.avg_pool(x, (2, 2), strides=(2, 2))
    x = nn.Conv(8, (3, 3), padding="VALID")(x)
    x = nn.relu(x)
    x = nn.max_pool(x, (2, 2), strides=(2, 2))
    x = x.reshape((x.shape[0], -1))
    x = nn.Dropout(0.25, deterministic=not train)(x)
    return nn.Dense(3)(x)


rng = np.random.RandomState(0)
labels = rng.randint(0, 3, 16)
xs = rng.normal(0, 1, (16, 10)).astype(np.float32) + labels[:, None].astype(np.float32)
images = rng.normal(0, 1, (16, 12, 12, 1)).astype(np.float32) + labels[:, None, None, None]

# ---- MLP
mlp = MLP()
params = mlp.init(jax.random.PRNGKey(0), xs)
tx = optax.sgd(0.05, momentum=0.9)
opt_state = tx.init(params)


@jax.jit
def mlp_step(params, opt_state):
  def loss_fn(p):
    logits = mlp.apply(p, xs)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
  loss, grads = jax.value_and_grad(loss_fn)(params)
  updates, opt_state = tx.update(grads, opt_state)
  return optax.apply_updates(params, updates), opt_state, loss


for _ in range(20):
  params, opt_state, mlp_loss = mlp_step(params, opt_state)
mlp_logits = mlp.apply(params, xs[:2])

# ---- CNN
cnn = CNN()
variables = cnn.init({"params": jax.random.PRNGKey(1)}, images, train=False)
cnn_params, batch_stats = variables["params"], variables["batch_stats"]
tx2 = optax.adam(1e-2)
opt2 = tx2.init(cnn_params)


@jax.jit
def cnn_step(params, batch_stats, opt_state, key):
  def loss_fn(p):
    logits, updates = cnn.apply({"params": p, "batch_stats": batch_stats}, images, train=True,
                                rngs={"dropout": key}, mutable=["batch_stats"])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return loss, updates["batch_stats"]
  (loss, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
  updates, opt_state = tx2.update(grads, opt_state, params)
  return optax.apply_updates(params, updates), new_stats, opt_state, loss


key = jax.random.PRNGKey(2)
for i in range(8):
  key, sub = jax.random.split(key)
  cnn_params, batch_stats, opt2, cnn_loss = cnn_step(cnn_params, batch_stats, opt2, sub)
eval_logits = cnn.apply({"params": cnn_params, "batch_stats": batch_stats}, images[:2],
                        train=False)
report(mlp_loss=mlp_loss, mlp_logits=mlp_logits, cnn_loss=cnn_loss, cnn_logits=eval_logits,
       bn_mean=batch_stats["BatchNorm_0"]["mean"][:4],
       n_params=sum(x.size for x in jax.tree_util.tree_leaves(cnn_params)))
