"""Array layouts (`minijax.experimental.layout`'s names).  minijax lets XLA choose every
layout; a compiled function reports the ones XLA chose (`Compiled.input_formats`), and a
`Format` carries a layout and a sharding for code that passes them around."""
from __future__ import annotations


class Layout:
  """A device-local memory layout: the order of the dimensions from major to minor (row-major
  `(0, 1, ..., n - 1)` on the CPU), the tiling and the bits of a sub-byte element; not
  applied to arguments."""

  def __init__(self, major_to_minor=None, tiling=(), sub_byte_element_size_in_bits: int = 0,
               *, _tiling=None):
    self.major_to_minor = None if major_to_minor is None else tuple(major_to_minor)
    self.tiling = tuple(tuple(t) for t in (_tiling if _tiling is not None else tiling))
    self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

  @classmethod
  def from_pjrt_layout(cls, layout) -> Layout:
    """The layout of jaxlib's `PjRtLayout` (an executable's parameter or result)."""
    return cls(tuple(reversed(layout._xla_layout().minor_to_major())))

  def _key(self):
    return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

  def __eq__(self, other):
    return type(other) is Layout and other._key() == self._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")


class Format:
  """A layout together with a sharding."""

  def __init__(self, layout=None, sharding=None):
    self.layout = layout
    self.sharding = sharding

  def __eq__(self, other):
    return (type(other) is Format and other.layout == self.layout
            and other.sharding == self.sharding)

  def __hash__(self):
    return hash((self.layout, self.sharding))

  def __repr__(self):
    return f"Format(layout={self.layout}, sharding={self.sharding})"


__all__ = ["Format", "Layout"]
