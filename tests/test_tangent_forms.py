"""The tangents of lax's elementwise primitives are written as JAX 0.10.2 writes them, so
that derivatives round as JAX's do: XLA compiles the same operations in the same order
(a product formed differently, or a multiply-add the compiler may fuse, differs in the last
bits, and higher derivatives and cancellations magnify that).  The jaxprs below are JAX's,
printed by JAX 0.10.2, character for character."""
import numpy as np
import pytest
import scipy.special

import minijax
import minijax.numpy as jnp
from minijax import lax

JVP_JAXPRS = {
    "tanh": (lax.tanh, """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = tanh a
    d:f32[] = mul b c
    e:f32[] = add b d
    f:f32[] = sub 1.0:f32[] c
    g:f32[] = mul e f
  in (c, g) }"""),
    "sqrt": (lax.sqrt, """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = sqrt a
    d:f32[] = div 0.5:f32[] c
    e:f32[] = mul b d
  in (c, e) }"""),
    "cbrt": (lax.cbrt, """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = cbrt a
    d:f32[] = integer_pow[y=-2] c
    e:f32[] = mul 0.3333333432674408:f32[] d
    f:f32[] = mul b e
  in (c, f) }"""),
    "acosh": (lax.acosh, """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = acosh a
    d:f32[] = square a
    e:f32[] = sub d 1.0:f32[]
    f:f32[] = rsqrt e
    g:f32[] = mul b f
  in (c, g) }"""),
    "atanh": (lax.atanh, """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = atanh a
    d:f32[] = add 1.0:f32[] a
    e:f32[] = integer_pow[y=-1] d
    f:f32[] = sub 1.0:f32[] a
    g:f32[] = div b f
    h:f32[] = mul e g
  in (c, h) }"""),
    "erf_inv": (lax.erf_inv, """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = erf_inv a
    d:f32[] = square c
    e:f32[] = exp d
    f:f32[] = mul b e
    g:f32[] = mul 0.8862269520759583:f32[] f
  in (c, g) }"""),
    "abs": (lax.abs, """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = abs a
    d:bool[] = ge a 0.0:f32[]
    e:f32[] = neg b
    f:f32[] = select_n d e b
  in (c, f) }"""),
}


@pytest.mark.parametrize("name", sorted(JVP_JAXPRS))
def test_tangent_is_jaxs_equation_for_equation(name):
  fun, expected = JVP_JAXPRS[name]
  x = np.float32(0.5)
  assert str(minijax.make_jaxpr(lambda x, t: minijax.jvp(fun, (x,), (t,)))(x, x)) == expected


def test_the_slope_of_abs_at_zero_is_one_as_in_jax():
  # (it was sign(0) = 0: a gradient that silently differed from JAX's)
  assert minijax.grad(jnp.abs)(0.0) == 1.0
  assert minijax.grad(jnp.abs)(-0.0) == 1.0
  assert minijax.grad(jnp.abs)(-2.0) == -1.0


def test_bessel_i0e_is_one_primitive_with_cephes_values():
  x = np.linspace(-30, 30, 241)
  closed = minijax.make_jaxpr(lax.bessel_i0e)(x.astype(np.float32))
  assert [e.primitive.name for e in closed.eqns] == ["bessel_i0e"]
  want = scipy.special.i0e(x)
  for dtype, rtol in ((np.float32, 4 * 2.0 ** -23), (np.float16, 2.0 ** -10),
                      (jnp.bfloat16, 2.0 ** -7)):
    got = np.asarray(lax.bessel_i0e(x.astype(dtype)), np.float64)
    np.testing.assert_allclose(got, scipy.special.i0e(x.astype(dtype).astype(np.float64)),
                               rtol=rtol, atol=0, err_msg=str(dtype))


def test_bessel_i0e_in_float64_takes_cephes_whole_series(x64):
  x = np.linspace(-30, 30, 241)
  np.testing.assert_allclose(np.asarray(lax.bessel_i0e(x)), scipy.special.i0e(x),
                             rtol=2e-15, atol=0)  # (Cephes: within a few ulps)


def test_bessel_derivatives_at_zero_and_away():
  # d i1e/dx -> 1/2 at 0; numpy's i0 has slope 0 at 0; i0e' = i1e - sign(x) i0e
  assert minijax.grad(lax.bessel_i1e)(0.0) == 0.5
  assert minijax.grad(jnp.i0)(0.0) == 0.0
  x = np.float32(1.5)
  np.testing.assert_allclose(minijax.grad(lax.bessel_i0e)(x),
                             scipy.special.i1e(1.5) - scipy.special.i0e(1.5), rtol=1e-5)
  y = np.linspace(-3, 3, 7).astype(np.float32)
  np.testing.assert_allclose(minijax.vmap(minijax.grad(jnp.i0))(y),
                             scipy.special.i1(y.astype(np.float64)), rtol=1e-5)


def test_normal_cdf_and_quantile_take_cephes_forms_and_bounds():
  from minijax.scipy import special
  x = np.linspace(-12, 12, 97).astype(np.float32)  # (float32's erfc far out: 1e-5 relative)
  np.testing.assert_allclose(special.ndtr(x), scipy.special.ndtr(x.astype(np.float64)),
                             rtol=2e-5, atol=0)
  x = np.linspace(-3, 3, 97).astype(np.float32)
  np.testing.assert_allclose(special.ndtr(x), scipy.special.ndtr(x.astype(np.float64)),
                             rtol=1e-6, atol=0)
  p = np.array([1e-30, 1e-10, 0.01, 0.1, 0.3, 0.5, 0.9, 0.999, 1 - 1e-7], np.float32)
  np.testing.assert_allclose(special.ndtri(p), scipy.special.ndtri(p.astype(np.float64)),
                             rtol=8 * 2.0 ** -23, atol=0)
  edges = special.ndtri(np.array([0.0, 1.0, -0.1, 1.1], np.float32)).tolist()
  assert edges[:2] == [-np.inf, np.inf] and np.isnan(edges[2:]).all()
  # differentiated through the rational approximation: 1 / pdf(ndtri(p)) to rounding
  q = np.float32(0.3)
  z = scipy.special.ndtri(0.3)
  np.testing.assert_allclose(minijax.grad(special.ndtri)(q),
                             np.sqrt(2 * np.pi) * np.exp(z * z / 2), rtol=1e-5)
