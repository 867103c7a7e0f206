import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax.experimental.ode import odeint
  from minijax.example_libraries import optimizers as opt, stax
else:
  import jax, jax.numpy as jnp
  from jax.experimental.ode import odeint
  from jax.example_libraries import optimizers as opt, stax

def show(v):
  v = np.asarray(v)
  return f"{v.dtype} {v.shape} " + " ".join(f"{x:.5g}" for x in v.ravel()[:12])

# odeint: values, gradients, pytrees, args, vmap, jit
def decay(y, t, k):
  return -k * y
ts = jnp.linspace(0.0, 2.0, 5)
print('decay', show(odeint(decay, 1.0, ts, 0.7)))
print('decay grad', show(jax.grad(lambda y0, k: odeint(decay, y0, ts, k)[-1], argnums=(0, 1))(1.0, 0.7)))
def pend(state, t, g):
  th, om = state
  return om, -g * jnp.sin(th)
out = odeint(pend, (jnp.float32(1.0), jnp.float32(0.0)), ts, 9.8, rtol=1e-6, atol=1e-6)
print('pendulum', show(out[0]), show(out[1]))
print('pendulum grad', show(jax.grad(lambda g: odeint(pend, (1.0, 0.0), ts, g)[0][-1])(9.8)))
print('vmap', show(jax.vmap(lambda k: odeint(decay, 1.0, ts, k))(jnp.array([0.1, 0.5, 1.0]))))
print('jit', show(jax.jit(lambda y0: odeint(decay, y0, ts, 0.3))(jnp.ones(2))))
def sine(y, t):
  return jnp.cos(t) * y
print('time dependent', show(odeint(sine, jnp.array([1.0, 2.0]), ts)))
print('t grad', show(jax.grad(lambda ts: odeint(sine, 1.0, ts)[-1])(ts)))
print('mxstep', show(odeint(decay, 1.0, jnp.array([0.0, 100.0]), 50.0, mxstep=3)))
try:
  odeint(decay, 1.0, ts, 0.7, hmax=1.0)
  print('hmax ok')
except Exception as e:
  print('hmax', type(e).__name__)
try:
  odeint(lambda y, t: y, 1, ts)
  print('int y0 ok')
except Exception as e:
  print('int y0', type(e).__name__, str(e)[:100])

# optimizers: each run for a few steps on a quadratic and a pytree
def loss(p):
  return jnp.sum((p['w'] - 3.0) ** 2) + jnp.sum(p['b'] ** 2 * jnp.arange(1.0, 3.0))
p0 = {'w': jnp.array([1.0, -1.0]), 'b': jnp.array([0.5, 0.2])}
makers = {
  'sgd': lambda: opt.sgd(0.1), 'momentum': lambda: opt.momentum(0.1, 0.9),
  'nesterov': lambda: opt.nesterov(0.1, 0.9), 'adagrad': lambda: opt.adagrad(0.3),
  'rmsprop': lambda: opt.rmsprop(0.1), 'rmsprop_momentum': lambda: opt.rmsprop_momentum(0.1),
  'adam': lambda: opt.adam(0.1), 'adamax': lambda: opt.adamax(0.1), 'sm3': lambda: opt.sm3(0.3),
  'sgd exp decay': lambda: opt.sgd(opt.exponential_decay(0.2, 2, 0.5)),
  'sgd inv time': lambda: opt.sgd(opt.inverse_time_decay(0.2, 2, 0.5, staircase=True)),
  'sgd poly': lambda: opt.sgd(opt.polynomial_decay(0.2, 3, 0.01, 2.0)),
  'sgd piecewise': lambda: opt.sgd(opt.piecewise_constant([2, 4], [0.2, 0.1, 0.01])),
}
for name, make in makers.items():
  init, update, get = make()
  state = init(p0)
  step = lambda i, s: update(i, jax.grad(loss)(get(s)), s)
  step = step if name == 'sm3' else jax.jit(step)  # (sm3's state holds shapes)
  for i in range(6):
    state = step(i, state)
  p = get(state)
  print('opt', name, show(p['w']), show(p['b']))
  packed = opt.unpack_optimizer_state(state)
  back = opt.pack_optimizer_state(packed)
  print('opt', name, 'pack', show(get(back)['w']), type(packed).__name__)
print('l2_norm', show(opt.l2_norm(p0)), show(opt.clip_grads(p0, 0.5)['w']))
for sched in [opt.constant(0.3), opt.exponential_decay(1.0, 10, 0.5), opt.polynomial_decay(1.0, 4, 0.1, 2.0),
              opt.piecewise_constant([3, 6], [1.0, 0.5, 0.1]), opt.inverse_time_decay(1.0, 2, 1.0)]:
  print('schedule', show(jnp.array([sched(i) for i in range(8)])))

# stax: init shapes and apply values with one key
key = jax.random.PRNGKey(0)
x = jax.random.normal(jax.random.PRNGKey(1), (2, 8, 8, 3))
nets = {
  'dense': stax.serial(stax.Flatten, stax.Dense(5), stax.Relu, stax.Dense(3), stax.LogSoftmax),
  'conv': stax.serial(stax.Conv(4, (3, 3), padding='SAME'), stax.Tanh, stax.MaxPool((2, 2)), stax.Flatten, stax.Dense(2)),
  'conv valid strided': stax.serial(stax.Conv(2, (3, 3), (2, 2)), stax.Elu, stax.AvgPool((2, 2), (1, 1)), stax.Flatten),
  'convT': stax.serial(stax.ConvTranspose(2, (3, 3), (2, 2), padding='SAME'), stax.Sigmoid, stax.SumPool((2, 2))),
  'batchnorm': stax.serial(stax.Conv(3, (1, 1)), stax.BatchNorm(), stax.Gelu, stax.Softplus),
  'fan': stax.serial(stax.FanOut(2), stax.parallel(stax.Identity, stax.serial(stax.Conv(3, (1, 1)), stax.Selu)), stax.FanInSum),
  'concat': stax.serial(stax.FanOut(2), stax.parallel(stax.Exp, stax.LeakyRelu), stax.FanInConcat(-1), stax.Softmax),
  'general': stax.serial(stax.GeneralConv(('NHWC', 'HWIO', 'NHWC'), 2, (2, 2)), stax.Flatten),
}
for name, (init, apply) in nets.items():
  shape, params = init(key, x.shape)
  y = apply(params, x)
  print('stax', name, shape, show(y), [np.shape(l) for l in jax.tree_util.tree_leaves(params)])
init, apply = stax.Dropout(0.5, mode='train')
shape, params = init(key, (4,))
print('dropout', show(apply(params, jnp.ones((2, 4)), rng=jax.random.PRNGKey(3))))
try:
  apply(params, jnp.ones((2, 4)))
except Exception as e:
  print('dropout without rng', type(e).__name__)
init, apply = stax.Conv1DTranspose(2, (3,), padding='VALID')
shape, params = init(key, (1, 5, 2))
print('conv1dT', shape, show(apply(params, jnp.ones((1, 5, 2)))))
print('initializers', show(stax.glorot()(key, (3, 2))), show(stax.randn()(key, (3,))))
