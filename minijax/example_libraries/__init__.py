"""`minijax.example_libraries`: JAX's small example libraries, `optimizers` and `stax`,
written for minijax with the same signatures."""
