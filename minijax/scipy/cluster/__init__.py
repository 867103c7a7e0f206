"""`minijax.scipy.cluster`: vector quantization (`vq`)."""
from minijax.scipy.cluster import vq  # noqa: F401
