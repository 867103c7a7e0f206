"""Benchmarks that compare minijax with JAX side by side (`python -m minijax.bench`)."""
