"""flax.nnx: a two-layer nnx.Module MLP with dropout, trained by an nnx.jit step
(nnx.value_and_grad, nnx.Optimizer with optax.adam), then an nnx.grad of the trained model
in eval mode (nnx.Dropout draws its mask with `random.bernoulli(..., out_sharding=)`)."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from _report import report


class MLP(nnx.Module):
  def __init__(self, rngs):
    self.l1 = nnx.Linear(3, 8, rngs=rngs)
    self.drop = nnx.Dropout(0.25, rngs=rngs)
    self.l2 = nnx.Linear(8, 2, rngs=rngs)

  def __call__(self, x):
    return self.l2(self.drop(nnx.relu(self.l1(x))))


model = MLP(nnx.Rngs(0))
opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
x = jnp.linspace(-1, 1, 12).reshape(4, 3)
y = jnp.stack([x.sum(1), x[:, 0] * x[:, 1]], 1)


@nnx.jit
def step(model, opt, x, y):
  def loss_fn(m):
    return ((m(x) - y) ** 2).mean()
  loss, grads = nnx.value_and_grad(loss_fn)(model)
  opt.update(model, grads)
  return loss


losses = [step(model, opt, x, y) for _ in range(20)]
model.eval()
grads = nnx.grad(lambda m: (m(x) ** 2).sum())(model)
n_params = sum(p.size for p in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))
report(first_loss=losses[0], final_loss=losses[-1], out=model(x)[0],
       grad_sum=grads.l1.kernel[...].sum(), n_params=n_params)
