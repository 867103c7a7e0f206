import sys, numpy as np
if sys.argv[1] == 'm':
  import minijax as jax, minijax.numpy as jnp, minijax.lax as lax
else:
  import jax, jax.numpy as jnp, jax.lax as lax

def fmt(v):
  v = np.asarray(v)
  if v.dtype.kind == 'c':
    body = ' '.join(f"{x.real:.4g}{x.imag:+.4g}j" for x in v.ravel()[:8])
  elif v.dtype.kind == 'f':
    body = ' '.join(f"{float(x):.4g}" for x in v.ravel()[:8])
  else:
    body = ' '.join(str(x) for x in v.ravel()[:8])
  return f"{v.dtype}{list(v.shape)} {body}"

def case(name, fn):
  try:
    out = fn()
    print(name, '|', ' || '.join(fmt(o) for o in jax.tree_util.tree_leaves(out)))
  except Exception as e:
    print(name, 'raises', type(e).__name__, str(e).splitlines()[0][:110] if str(e) else '')

r = np.random.RandomState(2)
x = jnp.array(r.randn(4, 6), jnp.float32)
z = jnp.array(r.randn(4, 6) + 1j * r.randn(4, 6), jnp.complex64)
F = jnp.fft
for name in ['fft', 'ifft', 'rfft', 'irfft', 'hfft', 'ihfft']:
  for norm in [None, 'ortho', 'forward', 'backward']:
    case(f'{name} {norm}', lambda: getattr(F, name)(z if name in ('ifft', 'irfft', 'hfft') else x, norm=norm))
  case(f'{name} n=4', lambda: getattr(F, name)(x, n=4))
  case(f'{name} n=9 axis0', lambda: getattr(F, name)(x, n=9, axis=0))
  case(f'{name} int', lambda: getattr(F, name)(jnp.arange(6)))
  case(f'{name} grad', lambda: jax.grad(lambda a: jnp.sum(jnp.abs(getattr(F, name)(a, n=5)) ** 2))(x))
  case(f'{name} jvp', lambda: jax.jvp(lambda a: getattr(F, name)(a), (x,), (jnp.ones_like(x),))[1])
  case(f'{name} vmap', lambda: jax.vmap(getattr(F, name), 1, 1)(x))
for name in ['fft2', 'ifft2', 'rfft2', 'irfft2', 'fftn', 'ifftn', 'rfftn', 'irfftn']:
  case(f'{name}', lambda: getattr(F, name)(z if name[0] == 'i' and name != 'ifftn' else x))
  case(f'{name} s', lambda: getattr(F, name)(x, s=(3, 8)))
  case(f'{name} axes', lambda: getattr(F, name)(jnp.stack([x, x * 2]), axes=(0, 2)))
  case(f'{name} ortho', lambda: getattr(F, name)(x, norm='ortho'))
  case(f'{name} grad', lambda: jax.grad(lambda a: jnp.sum(jnp.real(getattr(F, name)(a)) ** 2))(x))
case('fftn 3 axes', lambda: F.fftn(jnp.ones((2, 3, 4)), axes=(0, 1, 2)))
case('fftn 4 axes', lambda: F.fftn(jnp.ones((2, 2, 2, 2))))
case('rfftn 4d', lambda: F.rfftn(jnp.ones((2, 2, 2, 3)), axes=(0, 1, 2, 3)))
case('fftn dup axes', lambda: F.fftn(x, axes=(0, 0)))
case('fft bad norm', lambda: F.fft(x, norm='bad'))
case('fft n=0', lambda: F.fft(x, n=0))
case('fft axis oob', lambda: F.fft(x, axis=2))
case('fft2 s axes mismatch', lambda: F.fft2(x, s=(2, 2, 2)))
case('irfft odd', lambda: F.irfft(z, n=7))
case('hfft odd', lambda: F.hfft(z[0], n=9))
case('fft f64', lambda: F.fft(np.arange(4.0)))
case('fft bf16', lambda: F.fft(x.astype(jnp.bfloat16)))
case('fft f16', lambda: F.rfft(x.astype(jnp.float16)))
case('fftfreq', lambda: (F.fftfreq(5), F.fftfreq(6, 0.1), F.rfftfreq(7, d=2.0)))
case('fftfreq dtype', lambda: F.fftfreq(4, dtype=jnp.float16))
case('fftshift', lambda: (F.fftshift(jnp.arange(7)), F.ifftshift(jnp.arange(7)), F.fftshift(x, axes=1)))
case('fftshift axes tuple', lambda: F.fftshift(x, axes=(0,)))
case('lax.fft', lambda: lax.fft(z, lax.FftType.FFT, (6,)))
case('lax.fft ifft', lambda: lax.fft(z, lax.FftType.IFFT, (4, 6)))
case('lax.fft rfft', lambda: lax.fft(x, lax.FftType.RFFT, (6,)))
case('lax.fft irfft', lambda: lax.fft(z, lax.FftType.IRFFT, (10,)))
case('lax.fft str', lambda: lax.fft(z, 'fft', (6,)))
case('lax.fft grad rfft', lambda: jax.grad(lambda a: jnp.sum(jnp.abs(lax.fft(a, lax.FftType.RFFT, (6,))) ** 2))(x))
case('lax.fft grad irfft', lambda: jax.grad(lambda a: jnp.sum(lax.fft(a, lax.FftType.IRFFT, (6,)) ** 3).real, holomorphic=False)(z[:, :4]))
case('lax.fft transpose', lambda: jax.linear_transpose(lambda a: lax.fft(a, lax.FftType.FFT, (6,)), z)(z))
case('lax.fft jit', lambda: jax.jit(lambda a: lax.fft(a, lax.FftType.RFFT, (3, 6)))(x[:3]))
case('lax.fft bad type', lambda: lax.fft(x, lax.FftType.FFT, (6,)))
case('lax.fft bad lengths', lambda: lax.fft(z, lax.FftType.FFT, (5,)))
case('fft grad complex', lambda: jax.grad(lambda a: jnp.sum(jnp.abs(F.fft(a)) ** 2))(z))
case('fft jacfwd', lambda: jax.jacfwd(lambda a: F.rfft(a).real)(x[0]))
case('fft hessian', lambda: jax.hessian(lambda a: jnp.sum(jnp.abs(F.rfft(a)) ** 4))(x[0, :4]))
