"""numpyro: a Bayesian linear regression fitted by SVI (AutoNormal guide, Adam) and sampled
by NUTS (one chain)."""
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

from _report import report

rng = np.random.RandomState(0)
x = rng.normal(0, 1, 40).astype(np.float32)
y = (1.5 * x - 0.7 + rng.normal(0, 0.5, 40)).astype(np.float32)


def model(x, y=None):
  w = numpyro.sample("w", dist.Normal(0.0, 2.0))
  b = numpyro.sample("b", dist.Normal(0.0, 2.0))
  sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
  numpyro.sample("obs", dist.Normal(w * x + b, sigma), obs=y)


svi = SVI(model, AutoNormal(model), numpyro.optim.Adam(0.05), Trace_ELBO())
result = svi.run(jax.random.PRNGKey(0), 300, x, y, progress_bar=False)
svi_loc = jnp.stack([result.params["w_auto_loc"], result.params["b_auto_loc"]])

mcmc = MCMC(NUTS(model), num_warmup=100, num_samples=100, progress_bar=False)
mcmc.run(jax.random.PRNGKey(1), x, y)
samples = mcmc.get_samples()
# A short warmup: the draws follow JAX's to float32 rounding (a long one's step-size
# adaptation amplifies that rounding, so only its summary is compared closely).
short = MCMC(NUTS(model), num_warmup=5, num_samples=8, progress_bar=False)
short.run(jax.random.PRNGKey(1), x, y)
report(svi_final_loss=result.losses[-1], svi_loc=svi_loc,
       nuts_mean=jnp.stack([samples["w"].mean(), samples["b"].mean(), samples["sigma"].mean()]),
       nuts_first=jnp.stack([samples["w"][0], samples["b"][0]]),
       nuts_last=jnp.stack([samples["w"][-1], samples["b"][-1]]),
       nuts_short_w=short.get_samples()["w"])
