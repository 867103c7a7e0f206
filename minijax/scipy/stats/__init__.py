"""`minijax.scipy.stats`: densities, distribution functions and quantiles of scipy's
distributions, one module per distribution (`stats.norm.logpdf(x, loc, scale)`), with
scipy's and JAX's signatures.

Arguments are promoted to a common float dtype and broadcast.  Each function runs as one
compiled call when called eagerly and inline under a trace (`compiled_when_eager`), is
built from lax primitives and the special functions of `minijax.scipy.special`, and so
differentiates, batches and compiles.  Outside a distribution's support the density is 0
(log-density -inf) and distribution functions saturate, as in scipy.  Invalid parameters
are not checked (as in JAX): a negative scale gives whatever the formula gives, except
where JAX returns nan (beta's non-positive shapes, quantiles outside [0, 1]).
"""
from minijax.scipy.stats import (  # noqa: F401
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom,
    gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
    pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy)
from minijax.scipy.stats.kde import gaussian_kde  # noqa: F401,E402
from minijax.scipy.stats.summaries import ModeResult, mode, rankdata, sem  # noqa: F401,E402
