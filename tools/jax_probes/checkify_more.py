import sys, numpy as np
if sys.argv[1] == 'm':
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
    print(tag, '|', None if s is None else s.split('\n')[0][:120], '|',
          jax.tree_util.tree_map(lambda a: np.round(np.asarray(a, np.float64), 4).tolist(), out))
  except Exception as e:
    print(tag, '| EXC', type(e).__name__, str(e).split('\n')[0][:120])

x = jnp.arange(4.)
i = jnp.arange(4)
run('scatter oob vmap', jax.vmap(lambda v, k: v.at[k].set(1.)), jnp.ones((2, 3)), jnp.array([1, 5]))
run('gather oob vmap', jax.vmap(lambda v, k: v[k]), jnp.ones((2, 3)), jnp.array([1, 5]))
run('dynamic_update_slice oob', lambda v: lax.dynamic_update_slice(v, jnp.ones(2), (jnp.array(3),)), x)
run('dynamic_index neg', lambda v: lax.dynamic_index_in_dim(v, jnp.array(-5), keepdims=False), x)
run('int div vmap', jax.vmap(lambda a, b: a // b), i, jnp.array([1, 0, 2, 0]))
run('int rem', lambda a: lax.rem(a, jnp.zeros_like(a)), i)
run('float rem', lambda a: a % 0., x)
run('nan in grad of while?', jax.grad(lambda v: lax.fori_loop(0, 3, lambda k, c: c * jnp.log(v - 1), 1.)), 0.5)
run('nan in jvp', lambda v: jax.jvp(jnp.sqrt, (v,), (1.,))[1], 0.)
run('nan in vjp', lambda v: jax.vjp(jnp.log, v)[1](1.)[0], -1.)
run('user in scan', lambda v: lax.scan(lambda c, e: (checkify.check(e < 2, 'e={e}', e=e), c + e)[1:] * 2, 0., v), x)
run('user in cond branch', lambda v: lax.cond(v[0] > -1, lambda u: (checkify.check(u[1] > 5, 'branch {u}', u=u[1]), u)[1], lambda u: u, v), x)
run('user in switch', lambda v: lax.switch(1, [lambda u: u, lambda u: (checkify.check(False, 'two'), u)[1]], v), x)
run('user in custom_jvp', jax.custom_jvp(lambda v: (checkify.check(v.sum() > 100, 'cj'), v)[1]), x)
run('user in remat', jax.checkpoint(lambda v: (checkify.check(v.sum() > 100, 'rm'), v * 2)[1]), x)
run('user in pjit nested', jax.jit(jax.jit(lambda v: (checkify.check(v[0] > 1, 'nested {}', v[0]), v)[1])), x)
run('first of two', lambda v: (jnp.log(v - 10), v[jnp.array(9)], v / 0)[0], x)
run('errors union', lambda v: v[jnp.array(9)] / 0, x, errors=checkify.index_checks | checkify.div_checks)
run('errors nan|user', lambda v: (checkify.check(False, 'u'), jnp.log(-v))[1], x, errors=checkify.nan_checks | checkify.user_checks)
run('no checks', lambda v: jnp.log(-v), x, errors=frozenset())
run('check fmt tree', lambda v: (checkify.check(False, 'a={a} b={b}', a=v[:2], b={'k': v[2]}), v)[1], x)
run('check non-bool pred', lambda v: (checkify.check(v[0], 'pred'), v)[1], x)
run('check vector pred', lambda v: (checkify.check(v > 1, 'vec'), v)[1], x)
run('check traced msg?', lambda v: (checkify.check(v[0] < 0, 'plain'), v)[1], x)
run('debug_check', lambda v: (checkify.debug_check(v[0] > 1, 'dbg {}', v[0]), v)[1], x)
run('nan bf16', lambda v: jnp.log(v.astype(jnp.bfloat16) - 2), x)
run('nan complex', lambda v: jnp.log(v.astype(jnp.complex64) * jnp.nan), x)
run('nan int?', lambda v: (v // 1), i)
run('div int8', lambda v: v.astype(jnp.int8) // jnp.int8(0), i)
run('div by array w zero', lambda v: 1. / v, x)
run('nan max', lambda v: jnp.max(v * jnp.nan), x)
run('nan argmax', lambda v: jnp.argmax(v * jnp.nan), x)
run('nan sort', lambda v: jnp.sort(v.at[1].set(jnp.nan)), x)
run('oob take_along_axis', lambda v: jnp.take_along_axis(v, jnp.array([7]), axis=0), x)
run('oob slice static', lambda v: v[10:12], x)
run('oob int static', lambda v: v[7], x)
run('oob 2d', lambda v: v.reshape(2, 2)[jnp.array(1), jnp.array(3)], x)
run('oob pmap-free shard', lambda v: jax.vmap(lambda r: r[jnp.array(2)])(v.reshape(2, 2)), x)
def thrown():
  try:
    checkify.check(jnp.array(False), 'thrown here')
    return 'no'
  except Exception as e:
    return type(e).__name__ + ' ' + str(e).split('\n')[0][:60]
print('eager check', '|', thrown())
def jit_thrown():
  try:
    jax.jit(lambda v: (checkify.check(v[0] > 1, 'jit {}', v[0]), v)[1])(x)
    return 'no'
  except Exception as e:
    return type(e).__name__ + ' ' + str(e).split('\n')[0][:60]
print('jit check without checkify', '|', jit_thrown())
err, _ = checkify.checkify(lambda v: v / 0, errors=checkify.div_checks)(x)
def throws():
  try:
    err.throw()
    return 'no'
  except Exception as e:
    return type(e).__name__
print('throw', '|', throws(), type(err).__name__)
err2, _ = checkify.checkify(lambda v: v + 1)(x)
print('no error get/throw', '|', err2.get(), err2.throw())
print('jit of checkify', '|', jax.jit(checkify.checkify(lambda v: v / 0, errors=checkify.div_checks))(x)[0].get().split('\n')[0][:80])
print('checkify of vmap of jit', '|', checkify.checkify(jax.vmap(jax.jit(lambda v: jnp.log(v - 1))), errors=checkify.nan_checks)(x)[0].get().split('\n')[0][:80])
print('grad of checkify', '|', jax.grad(lambda v: checkify.checkify(lambda u: jnp.sum(u ** 2))(v)[1])(x))
print('vmap of checkify', '|', [e.get() is None for e in [jax.vmap(checkify.checkify(lambda u: u / (u - 1), errors=checkify.div_checks))(x)[0]]])
