"""`minijax.scipy.spatial`: rotations in three dimensions (`transform`)."""
from minijax.scipy.spatial import transform  # noqa: F401
