import sys, numpy as np, inspect
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
else:
  import jax, jax.numpy as jnp
r = jax.random
k = r.key(42)
cases = {
 'uniform': lambda: r.uniform(k, (3,)), 'normal': lambda: r.normal(k, (3,)), 'bernoulli': lambda: r.bernoulli(k, 0.3, (4,)),
 'randint': lambda: r.randint(k, (4,), 0, 10), 'choice': lambda: r.choice(k, 10, (3,), replace=False),
 'choice p': lambda: r.choice(k, 5, (4,), p=jnp.array([.1,.2,.3,.2,.2])), 'permutation': lambda: r.permutation(k, 6),
 'gamma': lambda: r.gamma(k, 2.5, (3,)), 'beta': lambda: r.beta(k, 2., 3., (3,)), 'dirichlet': lambda: r.dirichlet(k, jnp.array([1.,2,3])),
 'poisson': lambda: r.poisson(k, 3.5, (4,)), 'binomial': lambda: r.binomial(k, 10, 0.3, (4,)), 'categorical': lambda: r.categorical(k, jnp.array([0.,1,2]), shape=(4,)),
 'exponential': lambda: r.exponential(k, (3,)), 'laplace': lambda: r.laplace(k, (3,)), 'logistic': lambda: r.logistic(k, (3,)),
 'cauchy': lambda: r.cauchy(k, (3,)), 'gumbel': lambda: r.gumbel(k, (3,)), 'pareto': lambda: r.pareto(k, 2., (3,)),
 't': lambda: r.t(k, 3., (3,)), 'chisquare': lambda: r.chisquare(k, 3., (3,)), 'f': lambda: r.f(k, 3., 4., (3,)),
 'truncated_normal': lambda: r.truncated_normal(k, -1., 2., (3,)), 'multivariate_normal': lambda: r.multivariate_normal(k, jnp.zeros(2), jnp.eye(2), (2,)),
 'weibull_min': lambda: r.weibull_min(k, 1., 2., (3,)), 'rayleigh': lambda: r.rayleigh(k, 2., (3,)), 'wald': lambda: r.wald(k, 1., (3,)),
 'geometric': lambda: r.geometric(k, 0.3, (3,)), 'loggamma': lambda: r.loggamma(k, 2., (3,)), 'lognormal': lambda: r.lognormal(k, 0.5, (3,)),
 'maxwell': lambda: r.maxwell(k, (3,)), 'double_sided_maxwell': lambda: r.double_sided_maxwell(k, 0., 1., (3,)),
 'generalized_normal': lambda: r.generalized_normal(k, 1.5, (3,)), 'ball': lambda: r.ball(k, 3, 2.), 'orthogonal': lambda: r.orthogonal(k, 3),
 'rademacher': lambda: r.rademacher(k, (4,)), 'triangular': lambda: r.triangular(k, 0., 1., 2., (3,)), 'multinomial': lambda: r.multinomial(k, 10, jnp.array([.2,.3,.5])),
 'bits': lambda: r.bits(k, (3,)), 'split': lambda: r.key_data(r.split(k, 2)), 'fold_in': lambda: r.key_data(r.fold_in(k, 7)),
 'clone': lambda: r.key_data(r.clone(k)), 'shuffle?': lambda: r.permutation(k, jnp.arange(6.), independent=True),
 'binomial vec': lambda: r.binomial(k, jnp.array([5., 50., 500.]), jnp.array([0.1, .5, .9])),
 'poisson big': lambda: r.poisson(k, jnp.array([0.5, 15., 300.])),
 'gamma small': lambda: r.gamma(k, jnp.array([0.01, 0.5, 1e3])),
}
for n, f in cases.items():
  try:
    v = np.asarray(f())
    print(n, v.dtype, np.round(v.astype(np.float64), 5).tolist())
  except Exception as e: print(n, 'ERR', type(e).__name__, str(e)[:100])
