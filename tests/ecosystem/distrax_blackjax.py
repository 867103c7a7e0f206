"""distrax: a Normal transformed by a Tanh bijector and a MultivariateNormalDiag (log-probs,
samples, entropy, KL); blackjax: a random-walk Metropolis and an HMC chain on a 2-d
Gaussian, run by lax.scan."""
import blackjax
import distrax
import jax
import jax.numpy as jnp
import numpy as np

from _report import report

# ---- distrax
base = distrax.Normal(loc=jnp.array([0.5, -1.0]), scale=jnp.array([1.0, 0.3]))
squashed = distrax.Transformed(base, distrax.Tanh())
x = jnp.array([0.2, -0.4])
samples, log_probs = squashed.sample_and_log_prob(seed=jax.random.PRNGKey(0), sample_shape=3)
mvn = distrax.MultivariateNormalDiag(jnp.array([1.0, 2.0]), jnp.array([0.5, 1.5]))
mvn2 = distrax.MultivariateNormalDiag(jnp.array([0.0, 2.5]), jnp.array([1.0, 1.0]))

# ---- blackjax
cov = np.array([[1.0, 0.6], [0.6, 0.5]], np.float32)
prec = jnp.asarray(np.linalg.inv(cov))


def logdensity(z):
  return -0.5 * z @ prec @ z


def run(kernel, n, key):
  state = kernel.init(jnp.array([1.0, -1.0]))

  def one(state, k):
    state, info = kernel.step(k, state)
    return state, state.position
  _, positions = jax.lax.scan(one, state, jax.random.split(key, n))
  return positions


rmh = blackjax.additive_step_random_walk(logdensity, blackjax.mcmc.random_walk.normal(0.5))
hmc = blackjax.hmc(logdensity, step_size=0.3, inverse_mass_matrix=jnp.ones(2),
                   num_integration_steps=5)
rmh_pos = jax.jit(lambda k: run(rmh, 200, k))(jax.random.PRNGKey(3))
hmc_pos = jax.jit(lambda k: run(hmc, 100, k))(jax.random.PRNGKey(4))
report(tanh_log_prob=squashed.log_prob(x), samples=samples, sample_log_probs=log_probs,
       mvn_log_prob=mvn.log_prob(jnp.array([0.0, 1.0])), mvn_entropy=mvn.entropy(),
       kl=mvn.kl_divergence(mvn2), rmh_mean=rmh_pos.mean(0), rmh_last=rmh_pos[-1],
       hmc_mean=hmc_pos.mean(0), hmc_last=hmc_pos[-1])
