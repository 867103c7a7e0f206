"""`minijax.scipy`: the parts of scipy that JAX provides, on minijax arrays."""
from minijax.scipy import linalg  # noqa: F401
from minijax.scipy import signal  # noqa: F401
from minijax.scipy import special  # noqa: F401
from minijax.scipy import stats  # noqa: F401
from minijax.scipy import fft  # noqa: F401
from minijax.scipy import optimize  # noqa: F401
from minijax.scipy import cluster  # noqa: F401
from minijax.scipy import integrate  # noqa: F401
from minijax.scipy import interpolate  # noqa: F401
from minijax.scipy import ndimage  # noqa: F401
from minijax.scipy import sparse  # noqa: F401
from minijax.scipy import spatial  # noqa: F401
