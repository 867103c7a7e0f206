"""`debug.visualize_sharding(shape, sharding)` and `debug.visualize_array_sharding(x)`: a
picture of which devices hold which block of a 1-d or 2-d array, drawn with `rich` (which
must be installed, as for JAX) in JAX's layout:

    ┌──────────┬──────────┐
    │  CPU 0   │  CPU 1   │
    ├──────────┼──────────┤
    │  CPU 2   │  CPU 3   │
    └──────────┴──────────┘

Each block is a cell holding its devices' ids; a cell's height is its share of the rows
times 10 * `scale` lines (one line for a 1-d array), its width its share of the columns
times 2.5 times the array's aspect ratio times that height, clipped to
[`min_width`, `max_width`].  On a terminal with colours (and with matplotlib's colour maps
installed) the cells are coloured from `color_map` (tab20b) instead of ruled: minijax walks
the map in order, so the colours may differ from JAX's; the layout is the same.
"""
from __future__ import annotations

import importlib.util
from typing import Sequence

__all__ = ["visualize_array_sharding", "visualize_sharding"]

_HEIGHT_TO_WIDTH = 2.5  # a terminal character is about 2.5 times taller than wide


def _span(index: slice, size: int) -> tuple[int, int]:
  start = 0 if index.start is None else index.start
  return start, size if index.stop is None else index.stop


def _blocks(shape, sharding) -> dict[tuple[int, int], list]:
  """(row, column) -> [device ids, share of the rows (None for 1-d), share of the columns]."""
  blocks: dict[tuple[int, int], list] = {}
  for device, index in sharding.devices_indices_map(tuple(shape)).items():
    spans = [_span(i if isinstance(i, slice) else slice(i, i + 1), n)
             for i, n in zip(index, shape)]
    cell = tuple(start // (stop - start) if stop > start else 0 for start, stop in spans)
    shares = [(stop - start) / n for (start, stop), n in zip(spans, shape)]
    if len(shape) == 1:
      cell, shares = (0, *cell), [None, *shares]
    blocks.setdefault(cell, [set(), *shares])[0].add(device.id)
  return blocks


def _colors(console, use_color: bool, color_map, count: int):
  """An iterator of (background, text) colours, or None for ruled cells."""
  if not use_color or console.color_system is None:
    return None
  if color_map is None:
    try:
      import matplotlib
      color_map = matplotlib.colormaps["tab20b"]
    except ModuleNotFoundError:
      return None
  def rgb(value):
    red, green, blue = (int(255 * c) for c in color_map(value)[:3])
    text = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 140 else "white"
    return f"#{red:02x}{green:02x}{blue:02x}", text
  return iter([rgb(k / max(count - 1, 1)) for k in range(count)])


def visualize_sharding(shape: Sequence[int], sharding, *, use_color: bool = True,
                       scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                       color_map=None) -> None:
  """Prints which devices hold which block of an array of `shape` laid out by `sharding`."""
  if importlib.util.find_spec("rich") is None:
    raise ValueError("`visualize_sharding` requires `rich` to be installed.")
  import rich.align
  import rich.box
  import rich.console
  import rich.padding
  import rich.style
  import rich.table
  if not 1 <= len(shape) <= 2:
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  console = rich.console.Console(width=max_width)
  base_height = int(10 * scale)
  base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
  kind = next(iter(sharding.device_set)).platform.upper()
  blocks = _blocks(shape, sharding)
  rows, columns = (max(cell[k] for cell in blocks) + 1 for k in (0, 1))
  colors = _colors(console, use_color, color_map, rows * columns)
  table = rich.table.Table(show_header=False, show_lines=colors is None, padding=0,
                           highlight=colors is None, pad_edge=False,
                           box=rich.box.SQUARE if colors is None else None)
  for row in range(rows):
    cells = []
    for column in range(columns):
      devices, height_share, width_share = blocks[row, column]
      label = f"{kind} " + ",".join(str(d) for d in sorted(devices))
      width = int(width_share * base_width * _HEIGHT_TO_WIDTH)
      width = min(max(width, min_width), max_width)
      height = 1 if height_share is None else int(height_share * base_height)
      left, odd = divmod(width - len(label) - 2, 2)
      top, odd_line = divmod(height - 2, 2)
      pads = [top, left + odd, top + odd_line, left]  # (top, right, bottom, left)
      style = rich.style.Style()
      if colors is not None:
        background, text = next(colors)
        pads = [p + 1 for p in pads]
        style = rich.style.Style(bgcolor=background, color=text)
      cells.append(rich.padding.Padding(
          rich.align.Align(label, "center", vertical="middle"),
          tuple(max(p, 0) for p in pads), style=style))
    table.add_row(*cells)
  console.print(table, end="\n\n")


def visualize_array_sharding(arr, **kwargs) -> None:
  """`visualize_sharding(arr.shape, arr.sharding, **kwargs)`."""
  return visualize_sharding(arr.shape, arr.sharding, **kwargs)
