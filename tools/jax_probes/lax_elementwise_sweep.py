import sys, numpy as np
if sys.argv[1] == 'm':
  import minijax as jax, minijax.numpy as jnp, minijax.lax as lax
else:
  import jax, jax.numpy as jnp, jax.lax as lax
jax.config.update('jax_enable_x64', True)

def fmt(v):
  v = np.asarray(v)
  if v.dtype.kind == 'c':
    body = ' '.join(f"{x.real:.4g}{x.imag:+.4g}j" for x in v.ravel()[:12])
  elif v.dtype.kind == 'f' or v.dtype.name in ('bfloat16',):
    body = ' '.join(f"{float(x):.4g}" for x in v.ravel()[:12])
  else:
    body = ' '.join(str(x) for x in v.ravel()[:12])
  return f"{v.dtype}{list(v.shape)} {body}"

def case(name, fn):
  try:
    out = fn()
    outs = out if isinstance(out, (tuple, list)) else (out,)
    print(name, '|', ' || '.join(fmt(o) for o in outs))
  except Exception as e:
    print(name, 'raises', type(e).__name__)

EDGE = [-np.inf, -3.5, -1.0, -0.5, -0.0, 0.0, 1e-30, 0.25, 0.5, 1.0, 2.0, 7.25, 1e30, np.inf, np.nan]
INTS = [-9, -2, -1, 0, 1, 2, 7, 31]
def fvals(dt): return jnp.array(EDGE, dt)
def ivals(dt): return jnp.array(INTS, dt)
def cvals(dt): return jnp.array([0j, 1 + 1j, -2 + 0.5j, 0.5 - 3j, np.inf + 0j, complex(0, np.nan), -1 + 0j], dt)

unary_float = ['neg', 'sign', 'floor', 'ceil', 'round', 'is_finite', 'exp', 'exp2', 'expm1', 'log',
               'log1p', 'tanh', 'logistic', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh',
               'cosh', 'asinh', 'acosh', 'atanh', 'sqrt', 'rsqrt', 'cbrt', 'square', 'reciprocal',
               'lgamma', 'digamma', 'erf', 'erfc', 'erf_inv', 'bessel_i0e', 'bessel_i1e', 'abs']
for name in unary_float:
  for dt in ['float16', 'bfloat16', 'float32', 'float64']:
    case(f'{name} {dt}', lambda: getattr(lax, name)(fvals(dt)))
for name in ['neg', 'sign', 'exp', 'log', 'log1p', 'expm1', 'tanh', 'sin', 'cos', 'tan', 'asin',
             'acos', 'atan', 'sinh', 'cosh', 'asinh', 'acosh', 'atanh', 'sqrt', 'rsqrt', 'square',
             'reciprocal', 'abs', 'real', 'imag', 'conj', 'exp2', 'logistic']:
  for dt in ['complex64', 'complex128']:
    case(f'{name} {dt}', lambda: getattr(lax, name)(cvals(dt)))
for name in ['neg', 'sign', 'abs', 'square', 'population_count', 'clz', 'bitwise_not']:
  for dt in ['int8', 'int32', 'uint8', 'uint32', 'int64']:
    case(f'{name} {dt}', lambda: getattr(lax, name)(ivals(dt) if dt[0] == 'i' else ivals('int64').astype(dt)))
case('round even', lambda: lax.round(fvals('float32'), lax.RoundingMethod.TO_NEAREST_EVEN))
case('round half', lambda: lax.round(jnp.array([0.5, 1.5, 2.5, -0.5, -2.5]), 1))
case('integer_pow', lambda: [lax.integer_pow(fvals('float32'), k) for k in (-3, -1, 0, 2, 5)])
case('integer_pow int', lambda: [lax.integer_pow(ivals('int32'), k) for k in (0, 3)])
case('polygamma', lambda: lax.polygamma(jnp.array([0., 1, 2, 3]), jnp.array([0.5, 2, 3.5, 7])))
case('zeta', lambda: lax.zeta(jnp.array([2., 3, 1.5, 1]), jnp.array([1., 2, 0.5, 3])))
case('igamma', lambda: lax.igamma(jnp.array([0.5, 1, 3, 0]), jnp.array([0.5, 2, 1, 1])))
case('igammac', lambda: lax.igammac(jnp.array([0.5, 1, 3, 0]), jnp.array([0.5, 2, 1, 1])))
case('igamma_grad_a', lambda: lax.igamma_grad_a(jnp.array([0.5, 1, 3]), jnp.array([0.5, 2, 1])))
case('random_gamma_grad', lambda: lax.random_gamma_grad(jnp.array([0.5, 1, 3]), jnp.array([0.5, 2, 1])))
case('betainc', lambda: lax.betainc(jnp.array([0.5, 1, 3]), jnp.array([2., 2, 1]), jnp.array([0.1, 0.5, 0.9])))
case('bessel_i0e big', lambda: lax.bessel_i0e(jnp.array([-50., 30, 700])))

binary = ['add', 'sub', 'mul', 'div', 'rem', 'pow', 'max', 'min', 'atan2', 'nextafter',
          'eq', 'ne', 'lt', 'le', 'gt', 'ge']
X = EDGE; Y = [2.0, -0.0, 0.0, np.inf, -1.5, 3.0, np.nan, -np.inf, 0.5, 1.0, 7.0, -2.0, 1e-30, 2.0, 1.0]
for name in binary:
  for dt in ['float16', 'float32', 'float64', 'bfloat16']:
    case(f'{name} {dt}', lambda: getattr(lax, name)(jnp.array(X, dt), jnp.array(Y, dt)))
I1 = [-9, -7, 7, 9, 0, 5, -1, 31]; I2 = [2, -2, 3, -4, 3, 1, -1, 4]
for name in ['add', 'sub', 'mul', 'div', 'rem', 'max', 'min', 'shift_left', 'shift_right_logical',
             'shift_right_arithmetic', 'bitwise_and', 'bitwise_or', 'bitwise_xor', 'eq', 'lt', 'pow']:
  for dt in ['int8', 'int32', 'uint8', 'int64']:
    def f(name=name, dt=dt):
      a, b = np.array(I1), np.array(I2)
      if name == 'pow':
        return lax.pow(jnp.array(a, dt), jnp.array(np.abs(b) % 4, 'int32'))
      if dt[0] == 'u' or name.startswith('shift'):
        a, b = np.abs(a), np.abs(b)
      if name.startswith('shift'):
        b = np.array([0, 1, 3, 7, 8, 31, 33, 64]) % (np.dtype(dt).itemsize * 8 + 3)
      return getattr(lax, name)(jnp.array(a, dt), jnp.array(b, dt))
    case(f'{name} {dt}', f)
for name in ['add', 'sub', 'mul', 'div', 'pow', 'eq', 'ne']:
  for dt in ['complex64', 'complex128']:
    case(f'{name} {dt}', lambda: getattr(lax, name)(cvals(dt), cvals(dt)[::-1]))
case('complex', lambda: lax.complex(jnp.array([1., -0.0, np.inf]), jnp.array([2., np.nan, 1])))
case('pow complex int', lambda: lax.pow(cvals('complex64'), jnp.array(3, jnp.int32)))
case('clamp', lambda: lax.clamp(-1.0, fvals('float32'), 1.0))
case('clamp int', lambda: lax.clamp(jnp.int32(-1), ivals('int32'), jnp.int32(5)))
case('select_n', lambda: lax.select_n(jnp.array([0, 2, 1], jnp.int32), jnp.zeros(3), jnp.ones(3), jnp.full(3, 2.)))
for dt_from in ['float32', 'float64', 'bfloat16', 'float16']:
  for dt_to in ['int8', 'uint8', 'int32', 'uint32', 'int64', 'bool', 'float16']:
    case(f'convert {dt_from}->{dt_to}', lambda: lax.convert_element_type(fvals(dt_from), dt_to))
for dt_to in ['float32', 'int8', 'uint16', 'bool', 'complex64']:
  case(f'convert int64->{dt_to}', lambda: lax.convert_element_type(jnp.array([-300, -1, 0, 1, 255, 70000, 2**40], 'int64'), dt_to))
case('convert complex->float', lambda: lax.convert_element_type(cvals('complex64'), 'float32'))
case('bitcast f32->i32', lambda: lax.bitcast_convert_type(jnp.array([1., -0.0, np.inf], 'float32'), 'int32'))
case('bitcast f32->u8', lambda: lax.bitcast_convert_type(jnp.array([1., -2.], 'float32'), 'uint8'))
case('bitcast u8->f32', lambda: lax.bitcast_convert_type(jnp.arange(8, dtype='uint8').reshape(2, 4), 'float32'))
case('reduce_precision', lambda: lax.reduce_precision(jnp.array([1.1, 1e5, 1e-8, 3.14159]), 5, 2))

# derivatives at interior points, forward and reverse, and their second order
PTS = jnp.array([0.3, 0.7, 1.3, 2.1])
smooth = ['exp', 'exp2', 'expm1', 'log', 'log1p', 'tanh', 'logistic', 'sin', 'cos', 'tan', 'asin',
          'acos', 'atan', 'sinh', 'cosh', 'asinh', 'acosh', 'atanh', 'sqrt', 'rsqrt', 'cbrt',
          'square', 'reciprocal', 'lgamma', 'digamma', 'erf', 'erfc', 'erf_inv', 'bessel_i0e',
          'bessel_i1e', 'abs', 'neg', 'sign', 'floor', 'round']
for name in smooth:
  op = getattr(lax, name)
  pts = PTS / 3 if name in ('asin', 'acos', 'atanh', 'erf_inv') else PTS + (1 if name == 'acosh' else 0)
  case(f'jvp {name}', lambda: jax.jvp(op, (pts,), (jnp.ones(4),)))
  case(f'grad2 {name}', lambda: jax.vmap(jax.grad(jax.grad(lambda x: op(x))))(pts))
  case(f'grad complex {name}', lambda: jax.grad(lambda z: op(z).real)(jnp.complex64(0.3 + 0.2j)))
  case(f'vmap {name}', lambda: jax.vmap(op, 1, 0)(jnp.stack([pts, pts * 0.5])))
for name in ['add', 'sub', 'mul', 'div', 'rem', 'pow', 'max', 'min', 'atan2', 'nextafter']:
  op = getattr(lax, name)
  case(f'jvp {name}', lambda: jax.jvp(op, (PTS, PTS[::-1]), (jnp.ones(4), jnp.full(4, 0.5))))
  case(f'grad {name}', lambda: jax.vmap(jax.grad(op, argnums=(0, 1)))(PTS, PTS[::-1]))
  case(f'grad tie {name}', lambda: jax.grad(op, argnums=(0, 1))(1.5, 1.5))
  case(f'vmap {name}', lambda: jax.vmap(op, (0, None))(jnp.stack([PTS, PTS + 1]), PTS))
case('grad pow zero base', lambda: jax.grad(lax.pow, argnums=(0, 1))(0.0, 2.0))
case('grad pow zero exp', lambda: jax.grad(lax.pow, argnums=(0, 1))(0.0, 0.0))
case('grad pow neg base', lambda: jax.grad(lax.pow, argnums=(0, 1))(-2.0, 3.0))
case('grad pow int exp', lambda: jax.grad(lambda x: lax.pow(x, 3))(2.0))
case('grad sqrt 0', lambda: jax.grad(lax.sqrt)(0.0))
case('grad abs 0', lambda: jax.grad(lax.abs)(0.0))
case('grad cbrt 0', lambda: jax.grad(lax.cbrt)(0.0))
case('grad logistic big', lambda: jax.grad(lax.logistic)(jnp.array([-100., 100.])[0]))
case('grad integer_pow', lambda: [jax.grad(lambda x: lax.integer_pow(x, k))(0.0) for k in (0, 1, 2, -1)])
case('grad clamp', lambda: jax.vmap(jax.grad(lambda x: lax.clamp(-1.0, x, 1.0)))(jnp.array([-2., -1, 0, 1, 2])))
case('grad clamp bounds', lambda: jax.grad(lax.clamp, argnums=(0, 2))(0.0, 0.5, 1.0))
case('grad complex mul', lambda: jax.grad(lambda z: (z * z).real)(jnp.complex64(1 + 2j)))
case('grad abs complex', lambda: jax.grad(lax.abs)(jnp.complex64(3 + 4j)))
case('grad convert', lambda: jax.grad(lambda x: lax.convert_element_type(x, 'float16').astype('float32') * 3)(1.5))
case('jvp igamma', lambda: jax.jvp(lax.igamma, (jnp.array([0.5, 2.]), jnp.array([1., 3.])), (jnp.ones(2), jnp.ones(2))))
case('jvp igammac', lambda: jax.jvp(lax.igammac, (jnp.array([0.5, 2.]), jnp.array([1., 3.])), (jnp.ones(2), jnp.ones(2))))
case('jvp betainc x', lambda: jax.jvp(lambda x: lax.betainc(2., 3., x), (jnp.array([0.2, 0.7]),), (jnp.ones(2),)))
case('jvp zeta q', lambda: jax.jvp(lambda q: lax.zeta(3., q), (jnp.array([1., 2.5]),), (jnp.ones(2),)))
case('jvp polygamma', lambda: jax.jvp(lambda x: lax.polygamma(1., x), (jnp.array([1., 2.5]),), (jnp.ones(2),)))
# Python scalars that the array's dtype cannot hold, integer exponents
case('add int 1.5', lambda: lax.add(jnp.ones(3, 'int32'), 1.5))
case('max int 1.5', lambda: lax.max(2.5, jnp.ones(3, 'int32')))
case('clamp int 1.5', lambda: lax.clamp(-1, jnp.arange(3, dtype='int32'), 1.5))
case('mul float 1j', lambda: lax.mul(jnp.ones(3, 'float32'), 1j))
case('and bool 2', lambda: lax.bitwise_and(jnp.ones(3, 'bool'), 2))
case('pow f32 i32', lambda: lax.pow(jnp.array([2., 3, 0.5], 'float32'), jnp.array([3, -2, 0], 'int32')))
case('pow c64 i8', lambda: lax.pow(cvals('complex64'), jnp.int8(2)))
case('pow i32 f32', lambda: lax.pow(jnp.array([2], 'int32'), jnp.array([2.], 'float32')))
case('grad pow i32', lambda: jax.vmap(jax.grad(lambda x, n: lax.pow(x, n)), (0, 0))(jnp.array([0., 2, 3]), jnp.array([0, 3, -1], 'int32')))
case('vmap pow i32', lambda: jax.vmap(lax.pow, (0, None))(jnp.ones((2, 3)) * 2, jnp.array([1, 2, 3], 'int32')))
case('jit pow i32', lambda: jax.jit(lax.pow)(jnp.float32(2), jnp.int32(10)))
