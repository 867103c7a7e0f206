"""`minijax.scipy.sparse`: iterative solvers of linear systems (`linalg`)."""
from minijax.scipy.sparse import linalg  # noqa: F401
