"""`minijax.nn`: activation functions, softmax, one-hot encoding, standardization and (in
`minijax.nn.initializers`) parameter initializers, with JAX's signatures and numbers."""
from minijax.nn.functions import (  # noqa: F401
    identity, relu, relu6, sigmoid, softplus, sparse_plus, soft_sign, sparse_sigmoid, silu,
    swish, mish, log_sigmoid, elu, leaky_relu, hard_tanh, celu, selu, gelu, glu, hard_sigmoid,
    hard_silu, hard_swish, squareplus, logsumexp, logmeanexp, log_softmax, softmax,
    standardize, one_hot, tanh, log1mexp)
from minijax.nn.attention import dot_product_attention  # noqa: F401
from minijax.nn import initializers  # noqa: F401,E402
