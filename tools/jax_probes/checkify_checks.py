import sys, numpy as np, traceback
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax import lax
  from minijax.experimental import checkify
else:
  import jax, jax.numpy as jnp
  from jax import lax
  from jax.experimental import checkify
def run(tag, f, *args, errors=checkify.all_checks):
  try:
    err, out = checkify.checkify(f, errors=errors)(*args)
    s = err.get()
    print(tag, '|', None if s is None else s.split('\n')[0][:150], '|', jax.tree_util.tree_map(lambda a: np.round(np.asarray(a, np.float64), 4).tolist(), out))
  except Exception as e:
    print(tag, '| EXC', type(e).__name__, str(e).split('\n')[0][:150])
x = jnp.arange(4.)
run('div0', lambda x: x / 0, x)
run('intdiv0', lambda x: x // jnp.array(0), jnp.arange(3))
run('nan', lambda x: jnp.log(x - 2), x)
run('oob', lambda x: x[jnp.array(10)], x)
run('oob neg', lambda x: x[jnp.array(-10)], x)
run('oob set', lambda x: x.at[jnp.array(7)].set(1.), x)
run('user', lambda x: (checkify.check(x.sum() < 0, 'sum was {s}', s=x.sum()), x)[1], x)
run('user fmt pos', lambda x: (checkify.check(x[0] > 5, 'x0 {}', x[0]), x)[1], x)
run('jit div', jax.jit(lambda x: x / 0), x)
run('vmap user', jax.vmap(lambda x: (checkify.check(x < 2, 'too big {x}', x=x), x)[1]), x)
run('vmap nan', jax.vmap(lambda x: jnp.log(x - 2)), x)
run('grad nan', jax.grad(lambda x: jnp.sqrt(x - 2).sum()), x)
run('scan oob', lambda x: lax.scan(lambda c, i: (c + x[i], None), 0., jnp.arange(6))[0], x)
run('while user', lambda x: lax.while_loop(lambda c: c < 10, lambda c: (checkify.check(c < 5, 'c={c}', c=c), c + 1)[1], 0), x)
run('cond nan', lambda x: lax.cond(x[0] < 1, lambda x: jnp.log(x - 3), lambda x: x, x), x)
run('cond ok', lambda x: lax.cond(x[0] > 1, lambda x: jnp.log(x - 3), lambda x: x, x), x)
run('index only', lambda x: x[jnp.array(10)] / 0, x, errors=checkify.index_checks)
run('float only', lambda x: x[jnp.array(10)] / 0, x, errors=checkify.float_checks)
run('div only', lambda x: x / 0, x, errors=checkify.div_checks)
run('nan only', lambda x: jnp.log(x - 2), x, errors=checkify.nan_checks)
run('user only', lambda x: jnp.log(x - 2), x, errors=checkify.user_checks)
run('jit inside', lambda x: jax.jit(lambda y: y / 0)(x), x)
run('dynslice oob', lambda x: lax.dynamic_slice(x, (jnp.array(3),), (2,)), x)
run('gather', lambda x: jnp.take(x, jnp.array([1, 9])), x)
run('clip mode', lambda x: x.at[jnp.array(9)].get(mode='clip'), x)
run('fill mode', lambda x: x.at[jnp.array(9)].get(mode='fill', fill_value=0.), x)
run('remat', jax.checkpoint(lambda x: jnp.log(x - 2)), x)
run('custom_jvp', jax.nn.relu, jnp.array([jnp.nan]))
run('pow', lambda x: x ** -1., x)
run('rem int', lambda x: x % jnp.array(0), jnp.arange(3))
run('multiple', lambda x: (checkify.check(x[0] > 5, 'first'), checkify.check(x[1] > 5, 'second'), x)[2], x)
run('nan input', lambda x: x + 1, jnp.array([jnp.nan]))
run('inf', lambda x: jnp.exp(x * 1000), x)
run('sum nan', lambda x: jnp.sum(jnp.log(x - 2)), x)
run('nested checkify', lambda x: checkify.checkify(lambda y: y / 0)(x)[1], x)
run('debug_check', lambda x: (checkify.debug_check(x[0] > 5, 'dbg'), x)[1], x)
run('map', lambda x: lax.map(lambda v: jnp.log(v - 2), x), x)
run('fori', lambda x: lax.fori_loop(0, 5, lambda i, c: c + x[i], 0.), x)
run('argsort', lambda x: jnp.argsort(x)[jnp.array(7)], x)
run('vmap oob', jax.vmap(lambda i: x[i]), jnp.array([1, 9]))
