"""Array layouts (`minijax.experimental.layout`'s names).  minijax lets XLA choose every
layout; a compiled function reports the ones XLA chose (`Compiled.input_formats`), and a
`Format` carries a layout and a sharding for code that passes them around: where a sharding
is taken, a Format of the default layout stands for its sharding (`sharding_of`)."""
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


def sharding_of(target, what: str):
  """`target`, or the sharding of a `Format` when its layout is what minijax lays every
  array out as (row-major, untiled: XLA's default); a `Format` asking for another layout
  is refused, since minijax lets XLA choose layouts and cannot honour it."""
  if not isinstance(target, Format):
    return target
  layout = target.layout
  if layout is not None and (
      layout.tiling or layout.sub_byte_element_size_in_bits
      or (layout.major_to_minor is not None
          and layout.major_to_minor != tuple(range(len(layout.major_to_minor))))):
    raise NotImplementedError(
        f"{what} of {target}: minijax lays every array out row-major (XLA's default) and "
        "cannot apply another layout; pass the Format's sharding alone, or "
        "Layout(major_to_minor=(0, 1, ...)) or None as its layout")
  return target.sharding


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
