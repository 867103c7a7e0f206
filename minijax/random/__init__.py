"""`minijax.random`: JAX's counter-based PRNG, bit for bit.

Keys are explicit values: `key = random.key(0)` (a typed key array) or
`random.PRNGKey(0)` (its raw `uint32[2]` data); `random.split` and `random.fold_in` derive
new keys, and every sampler is a pure function of its key, so the same key gives the same
numbers eagerly, under `jit`, under `vmap` (of keys or of shapes) and on every run.  The
numbers are those of JAX 0.10.2 with its defaults (threefry2x32,
`jax_threefry_partitionable=True`), and of its other implementations (`impl='rbg'`, ...,
or the `jax_default_prng_impl` flag).

Layout: `prng.py` holds the PRNG implementations' registry and typed key arrays (see its
docstring for why they are a pytree), `threefry2x32.py` the default implementation (how
keys and counters map to bits), `rbg.py` the implementations on XLA's bit generator,
`keyops.py` the array operations on key arrays, `_keys.py` the public key API; `_samplers.py`
the continuous samplers built on uniform bits; `_discrete.py` the discrete ones;
`_gamma.py` gamma and the distributions built on it, and Poisson.  `PRNGKeyArray` (the
class of typed keys, for `isinstance`) is minijax's; the other names are JAX's.
"""
from minijax.random._keys import (  # noqa: F401
    PRNGKey, PRNGKeyArray, clone, fold_in, key, key_data, key_dtype, key_impl, split,
    wrap_key_data)
from minijax.random.prng import PRNGImpl, default_prng_impl  # noqa: F401
from minijax.random import keyops  # noqa: F401  (installs the array operations on keys)
from minijax.random._samplers import (  # noqa: F401
    bernoulli, bits, cauchy, double_sided_maxwell, exponential, gumbel, laplace, logistic,
    lognormal, maxwell, multivariate_normal, normal, orthogonal, pareto, rademacher, rayleigh,
    triangular, truncated_normal, uniform, wald, weibull_min)
from minijax.random._discrete import (  # noqa: F401
    binomial, categorical, choice, geometric, multinomial, permutation, randint)
from minijax.random._gamma import (  # noqa: F401
    ball, beta, chisquare, dirichlet, f, gamma, generalized_normal, loggamma, poisson, t)
