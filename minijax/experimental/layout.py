"""`minijax.experimental.layout`: names for array layouts.  minijax lets XLA choose every
layout; a `Format` only carries a layout and a sharding for code that passes them around."""
from __future__ import annotations


class Layout:
  """A device-local memory layout (`major_to_minor` order of dimensions); not applied."""

  def __init__(self, major_to_minor=None, _tiling=None):
    self.major_to_minor = None if major_to_minor is None else tuple(major_to_minor)

  def __repr__(self):
    return f"Layout(major_to_minor={self.major_to_minor})"


class Format:
  """A layout together with a sharding."""

  def __init__(self, layout=None, sharding=None):
    self.layout = layout
    self.sharding = sharding

  def __repr__(self):
    return f"Format({self.layout}, {self.sharding})"


__all__ = ["Format", "Layout"]
