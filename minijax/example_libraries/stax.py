"""Stax: neural networks as pairs of functions, with JAX's signatures.

A layer is `(init_fun, apply_fun)`: `init_fun(rng, input_shape)` returns the output shape
and the layer's parameters (a pytree), `apply_fun(params, inputs, **kwargs)` computes the
outputs (`rng=` reaches layers that need randomness, such as Dropout).  Combinators build
layers from layers: `serial` chains them (splitting the key once per layer), `parallel`
applies one layer per input of a list, `FanOut` copies an input, `FanInSum` and
`FanInConcat` join a list, `shape_dependent` defers construction until the input shape is
known.  Layers whose parameters come from the same initializers and keys as JAX's get the
same parameters.

    init_fun, apply_fun = stax.serial(stax.Conv(8, (3, 3)), stax.Relu, stax.Flatten,
                                      stax.Dense(10), stax.LogSoftmax)
    out_shape, params = init_fun(random.PRNGKey(0), (-1, 28, 28, 1))
"""
from __future__ import annotations

import functools
import math

from minijax import lax
from minijax import numpy as jnp
from minijax import random
from minijax.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                        softplus, standardize)
from minijax.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = ["Dense", "GeneralConv", "Conv", "Conv1DTranspose", "ConvTranspose",
           "GeneralConvTranspose", "BatchNorm", "elementwise", "Tanh", "Relu", "Exp",
           "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu",
           "MaxPool", "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum",
           "FanInConcat", "Dropout", "serial", "parallel", "shape_dependent", "glorot",
           "randn", "logsoftmax"]

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
  """A fully connected layer: inputs @ W + b."""
  def init_fun(rng, input_shape):
    k1, k2 = random.split(rng)
    W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
    return tuple(input_shape[:-1]) + (out_dim,), (W, b)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return jnp.dot(inputs, W) + b
  return init_fun, apply_fun


def _kernel_shape(specs, out_chan, filter_shape, input_shape):
  lhs_spec, rhs_spec, _ = specs
  sizes = iter(filter_shape)
  return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
          else next(sizes) for c in rhs_spec]


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
  """A convolution with the layouts of `dimension_numbers` (three strings) and a bias per
  output channel."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  one = (1,) * len(filter_shape)
  strides = strides or one
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
    output_shape = lax.conv_general_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                dimension_numbers)
    bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
    k1, k2 = random.split(rng)
    return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers) + b
  return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
  """A transposed convolution (`lax.conv_transpose`) with a bias per output channel."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  one = (1,) * len(filter_shape)
  strides = strides or one
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
    output_shape = lax.conv_transpose_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                  dimension_numbers)
    bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
    k1, k2 = random.split(rng)
    return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return lax.conv_transpose(inputs, W, strides, padding,
                              dimension_numbers=dimension_numbers) + b
  return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
  """Standardizes over `axis` (batch statistics), then scales by gamma and shifts by beta."""
  axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

  def init_fun(rng, input_shape):
    shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    k1, k2 = random.split(rng)
    beta = beta_init(k1, shape) if center else ()
    gamma = gamma_init(k2, shape) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
    z = standardize(x, axis, epsilon=epsilon)
    if center and scale:
      return gamma[expand] * z + beta[expand]
    if center:
      return z + beta[expand]
    if scale:
      return gamma[expand] * z
    return z
  return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
  """A layer without parameters applying `fun(inputs, **fun_kwargs)`."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
  def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
    """A pooling layer over the spatial axes (all but N and C of `spec`, by default the
    first and last)."""
    window_shape = tuple(window_shape)
    strides = tuple(strides or (1,) * len(window_shape))
    rescale = rescaler(window_shape, strides, padding) if rescaler else None
    non_spatial = (0, len(window_shape) + 1) if spec is None else (spec.index("N"),
                                                                  spec.index("C"))
    full_window, full_strides = window_shape, strides
    for i in sorted(non_spatial):
      full_window = full_window[:i] + (1,) + full_window[i:]
      full_strides = full_strides[:i] + (1,) + full_strides[i:]

    def init_fun(rng, input_shape):
      pads = lax.padtype_to_pads(input_shape, full_window, full_strides, padding)
      ones_ = (1,) * len(full_window)
      return lax.reduce_window_shape_tuple(input_shape, full_window, full_strides, pads,
                                           ones_, ones_), ()

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides, padding)
      return rescale(out, inputs, spec) if rescale else out
    return init_fun, apply_fun
  return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.0)


def _normalize_by_window_size(dims, strides, padding):
  def rescale(outputs, inputs, spec):
    non_spatial = (0, inputs.ndim - 1) if spec is None else (spec.index("N"),
                                                             spec.index("C"))
    spatial_shape = tuple(n for i, n in enumerate(inputs.shape) if i not in non_spatial)
    counts = lax.reduce_window(jnp.ones(spatial_shape, dtype=inputs.dtype), 0.0, lax.add,
                               dims, strides, padding)
    for i in sorted(non_spatial):
      counts = jnp.expand_dims(counts, i)
    return outputs / counts
  return rescale


AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)


def _flatten():
  def init_fun(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))
  return init_fun, apply_fun


Flatten = _flatten()


def _identity():
  return (lambda rng, input_shape: (input_shape, ())), (lambda params, inputs, **kw: inputs)


Identity = _identity()


def FanOut(num):
  """Copies its input into a list of `num`."""
  return ((lambda rng, input_shape: ([input_shape] * num, ())),
          (lambda params, inputs, **kwargs: [inputs] * num))


def _fan_in_sum():
  return ((lambda rng, input_shape: (input_shape[0], ())),
          (lambda params, inputs, **kwargs: sum(inputs)))


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
  """Concatenates a list of inputs along `axis`."""
  def init_fun(rng, input_shape):
    ax = axis % len(input_shape[0])
    size = sum(shape[ax] for shape in input_shape)
    return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.concatenate(inputs, axis)
  return init_fun, apply_fun


def Dropout(rate, mode="train"):
  """Keeps each input with probability `rate` (scaled by 1 / rate) in 'train' mode;
  apply_fun needs `rng=`."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get("rng", None)
    if rng is None:
      raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                       "argument. That is, instead of `apply_fun(params, inputs)`, call it "
                       "like `apply_fun(params, inputs, rng)` where `rng` is a PRNG key "
                       "(e.g. from `minijax.random.key`).")
    if mode == "train":
      keep = random.bernoulli(rng, rate, inputs.shape)
      return jnp.where(keep, inputs / rate, 0)
    return inputs
  return init_fun, apply_fun


def serial(*layers):
  """The layers one after the other."""
  init_funs, apply_funs = zip(*layers)
  n = len(layers)

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, param = init(layer_rng, input_shape)
      params.append(param)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    rngs = random.split(rng, n) if rng is not None else (None,) * n
    for fun, param, layer_rng in zip(apply_funs, params, rngs):
      inputs = fun(param, inputs, rng=layer_rng, **kwargs)
    return inputs
  return init_fun, apply_fun


def parallel(*layers):
  """One layer per element of a list of inputs, giving a list of outputs."""
  init_funs, apply_funs = zip(*layers)
  n = len(layers)

  def init_fun(rng, input_shape):
    rngs = random.split(rng, n)
    return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    rngs = random.split(rng, n) if rng is not None else (None,) * n
    return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
  return init_fun, apply_fun


def shape_dependent(make_layer):
  """The layer `make_layer(input_shape)`, built once the input shape is known."""
  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)
  return init_fun, apply_fun
