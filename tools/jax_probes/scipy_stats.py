import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp, minijax.scipy.stats as st
else:
  import jax, jax.numpy as jnp, jax.scipy.stats as st
jax.config.update('jax_enable_x64', True)

def show(v):
  v = np.asarray(v)
  return f"{v.dtype} {v.shape} " + " ".join(f"{x:.5g}" for x in v.ravel())

xs = np.array([-1.5, -0.0, 0.0, 0.3, 1.0, 2.5, 7.0, np.inf, np.nan])
unit = np.array([-0.1, 0.0, 1e-3, 0.25, 0.5, 0.9, 1.0, 1.1])
ints = np.array([-1, 0, 1, 2, 3, 7, 20])
continuous = {
  'norm': (xs, (0.5, 2.0)), 'cauchy': (xs, (0.5, 2.0)), 'laplace': (xs, (0.5, 2.0)),
  'logistic': (xs, (0.5, 2.0)), 'expon': (xs, (0.5, 2.0)), 'gumbel_l': (xs, (0.5, 2.0)),
  'gumbel_r': (xs, (0.5, 2.0)), 'uniform': (xs, (0.5, 2.0)), 'pareto': (xs, (1.5, 0.1, 0.5)),
  'gamma': (xs, (2.5, 0.1, 1.5)), 'chi2': (xs, (3.0, 0.1, 1.5)), 'beta': (unit, (2.0, 3.0)),
  't': (xs, (4.0, 0.5, 2.0)), 'gennorm': (xs, (1.5,)), 'truncnorm': (xs, (-1.0, 2.0, 0.5, 1.2)),
  'vonmises': (xs, (2.0,)), 'wrapcauchy': (unit * 6, (0.5,)),
}
for name, (x, params) in continuous.items():
  mod = getattr(st, name)
  for fn in ['pdf', 'logpdf', 'cdf', 'logcdf', 'sf', 'logsf', 'ppf', 'isf']:
    if not hasattr(mod, fn):
      continue
    f = getattr(mod, fn)
    arg = unit if fn in ('ppf', 'isf') else x
    for dt in (np.float32, np.float64):
      try:
        print(name, fn, dt.__name__, show(f(arg.astype(dt), *[dt(p) for p in params])))
      except Exception as e:
        print(name, fn, dt.__name__, 'raises', type(e).__name__)
    try:
      g = jax.jit(jax.vmap(jax.grad(lambda a, *p: f(a, *p), argnums=tuple(range(1 + len(params))))))
      grads = g(arg[3:6].astype(np.float32), *[np.full(3, p, np.float32) for p in params])
      print(name, fn, 'grad', ' | '.join(show(v) for v in grads))
    except Exception as e:
      print(name, fn, 'grad raises', type(e).__name__)

discrete = {
  'poisson': (2.5,), 'geom': (0.3,), 'binom': (10.0, 0.3), 'nbinom': (4.0, 0.4),
  'betabinom': (10.0, 2.0, 3.0), 'bernoulli': (0.3,),
}
for name, params in discrete.items():
  mod = getattr(st, name)
  for fn in ['pmf', 'logpmf', 'cdf', 'ppf', 'entropy']:
    if not hasattr(mod, fn):
      continue
    f = getattr(mod, fn)
    for dt in (np.float32, np.float64):
      arg = unit.astype(dt) if fn == 'ppf' else ints.astype(dt)
      try:
        out = f(*[dt(p) for p in params]) if fn == 'entropy' else f(arg, *[dt(p) for p in params])
        print(name, fn, dt.__name__, show(out))
      except Exception as e:
        print(name, fn, dt.__name__, 'raises', type(e).__name__)
    if fn in ('logpmf',):
      g = jax.grad(lambda *p: f(ints[1:5].astype(np.float32), *p).sum(), argnums=tuple(range(len(params))))
      print(name, fn, 'grad', ' | '.join(show(v) for v in g(*[np.float32(p) for p in params])))

rng = np.random.RandomState(0)
a = rng.randn(4, 4); cov = a @ a.T + 4 * np.eye(4)
for dt in (np.float32, np.float64):
  x = rng.randn(3, 4).astype(dt)
  print('mvn logpdf', dt.__name__, show(st.multivariate_normal.logpdf(x, np.zeros(4, dt), cov.astype(dt))))
  print('mvn pdf', dt.__name__, show(st.multivariate_normal.pdf(x[0], np.ones(4, dt), cov.astype(dt))))
alpha = np.array([1.5, 2.0, 0.7])
p = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
for dt in (np.float32, np.float64):
  print('dirichlet logpdf', dt.__name__, show(st.dirichlet.logpdf(p.T.astype(dt), alpha.astype(dt))))
  print('dirichlet pdf', dt.__name__, show(st.dirichlet.pdf(p[0].astype(dt), alpha.astype(dt))))
  print("multinomial logpmf", dt.__name__, show(st.multinomial.logpmf(np.array([2, 3, 5]), 10, p[0].astype(dt))))
  print("multinomial pmf", dt.__name__, show(st.multinomial.pmf(np.array([[2, 3, 4], [2, 3, 5]]), 10, p[0].astype(dt))))
print('mvn grad', show(jax.grad(lambda m: st.multivariate_normal.logpdf(np.ones(4), m, cov))(np.zeros(4))))
print('dirichlet grad', show(jax.grad(lambda a: st.dirichlet.logpdf(p[0], a))(alpha)))
for fn in ['logpdf', 'pdf', 'cdf']:
  print('bcast', fn, show(getattr(st.norm, fn)(xs[:4, None].astype(np.float32), np.zeros((1, 3), np.float32), 1.0)))
print('int args', show(st.norm.logpdf(np.arange(3), 1, 2)), show(st.poisson.pmf(np.arange(3), 2)))
print('bool', show(st.bernoulli.pmf(np.array([True, False]), 0.3)))
print('mode', show(st.mode(np.array([[1, 2, 2], [3, 3, 1]]), axis=1).mode), show(st.mode(np.array([[1, 2, 2], [3, 3, 1]]), axis=1).count))
print('rankdata', show(st.rankdata(np.array([3., 1., 2., 2., 5.]))), show(st.rankdata(np.array([3., 1., 2., 2., 5.]), method='min')))
print('sem', show(st.sem(np.array([[1., 2., 4.], [3., 5., 9.]]), axis=1)), show(st.sem(np.array([1., 2., 4., 8.]), ddof=0)))
print('gkde', show(st.gaussian_kde(np.array([0.1, 0.4, 0.5, 1.3, 2.0])).evaluate(np.array([0., 0.5, 1.0]))))
try:
  st.multinomial.logpmf(np.array([2., 3., 5.]), 10, p[0])
except ValueError as e:
  print('multinomial float counts', e)
