import sys, numpy as np
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp, minijax.image as image, minijax.scipy.signal as signal
else:
  import jax, jax.numpy as jnp, jax.image as image, jax.scipy.signal as signal

def show(v):
  a = np.asarray(v)
  return f"{a.dtype}{list(a.shape)}:" + ",".join(f"{x:.5g}" for x in a.ravel()[:10])

def case(name, fn):
  try:
    print(name, show(fn()))
  except Exception as e:
    print(name, 'raises', type(e).__name__, str(e).splitlines()[0][:150] if str(e) else '')

rng = np.random.RandomState(0)
img = rng.rand(5, 7, 3).astype(np.float32)
for method in ['nearest', 'linear', 'bilinear', 'cubic', 'lanczos3', 'lanczos5', 'trilinear', 'bicubic']:
  for shape in [(10, 14, 3), (3, 4, 3), (5, 3, 3)]:
    case(f'resize {method} {shape}', lambda: image.resize(img, shape, method))
  case(f'resize {method} antialias off', lambda: image.resize(img, (3, 4, 3), method, antialias=False))
case('resize int', lambda: image.resize(np.arange(12, dtype=np.int32).reshape(3, 4), (6, 8), 'linear'))
case('resize bad method', lambda: image.resize(img, (3, 4, 3), 'foo'))
case('resize rank', lambda: image.resize(img, (3, 4), 'linear'))
case('resize grad', lambda: jax.grad(lambda x: image.resize(x, (8, 9, 3), 'cubic').sum())(img))
case('scale_and_translate', lambda: image.scale_and_translate(img, (6, 8, 3), (0, 1), jnp.array([1.2, 1.1]), jnp.array([0.3, -0.2]), 'linear'))
case('scale_and_translate lanczos', lambda: image.scale_and_translate(img, (6, 8, 3), (0, 1), jnp.array([1.2, 1.1]), jnp.array([0.3, -0.2]), 'lanczos3', antialias=False))
case('scale_and_translate grad', lambda: jax.grad(lambda s: image.scale_and_translate(img, (6, 8, 3), (0, 1), s, jnp.zeros(2), 'linear').sum())(jnp.array([1.2, 1.1])))

x = rng.randn(50).astype(np.float32)
y = rng.randn(7).astype(np.float32)
for mode in ['full', 'same', 'valid']:
  case(f'convolve {mode}', lambda: signal.convolve(x, y, mode=mode))
  case(f'correlate {mode}', lambda: signal.correlate(x, y, mode=mode))
  case(f'fftconvolve {mode}', lambda: signal.fftconvolve(x, y, mode=mode))
  case(f'convolve2d {mode}', lambda: signal.convolve2d(img[..., 0], img[:3, :2, 1], mode=mode))
  case(f'correlate2d {mode}', lambda: signal.correlate2d(img[..., 0], img[:3, :2, 1], mode=mode))
case('convolve2d boundary', lambda: signal.convolve2d(img[..., 0], img[:3, :2, 1], boundary='wrap'))
case('convolve method', lambda: signal.convolve(x, y, method='fft'))
case('detrend', lambda: signal.detrend(x))
case('detrend constant', lambda: signal.detrend(x, type='constant'))
case('detrend bp', lambda: signal.detrend(x, bp=[10, 30]))
for window in ['hann', 'hamming', ('tukey', 0.3)]:
  case(f'stft {window}', lambda: signal.stft(x, nperseg=16, window=window)[2])
  case(f'welch {window}', lambda: signal.welch(x, nperseg=16, window=window)[1])
case('csd', lambda: signal.csd(x, x[::-1], nperseg=16)[1])
case('istft', lambda: signal.istft(signal.stft(x, nperseg=16)[2], nperseg=16)[1])
case('stft onesided off', lambda: signal.stft(x, nperseg=8, return_onesided=False)[2])
case('welch scaling', lambda: signal.welch(x, nperseg=16, scaling='spectrum', average='median')[1])
case('convolve int', lambda: signal.convolve(np.arange(5), np.arange(3)))
case('convolve complex', lambda: signal.convolve(x[:5] + 1j, y[:3]))
