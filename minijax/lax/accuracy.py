"""The `accuracy=` of lax's transcendental functions (`sin`, `exp`, `tanh`, ...), as JAX's:
a `Tolerance` (absolute, relative or ulps) or an `AccuracyMode`.  An equation carries it as
its `accuracy` parameter only when it was given (so `sin a` prints as before), and lowers
it to the op's MHLO `result_accuracy` attribute, which a backend with several
implementations of the function chooses by; XLA's CPU has one and computes it, as it does
for JAX.  `AccuracyMode.DEFAULT` lowers to no attribute."""
from __future__ import annotations

import enum

from jaxlib.mlir import ir

__all__ = ["AccuracyMode", "Tolerance"]


class Tolerance:
  """The tolerances a result must meet: `atol` and `rtol`, or `atol` and `ulps`."""

  def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
    if atol < 0.0 or rtol < 0.0 or ulps < 0:
      raise ValueError("Tolerances must be non-negative.")
    if atol == 0.0 and rtol == 0.0 and ulps == 0:
      raise ValueError("At least one of atol, rtol, or ulps must be set.")
    self.atol, self.rtol, self.ulps = atol, rtol, ulps

  def __repr__(self):
    return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


class AccuracyMode(enum.Enum):
  HIGHEST = 1
  DEFAULT = 2


def params(accuracy) -> dict:
  """The equation parameters for `accuracy=` (none for None)."""
  if accuracy is None:
    return {}
  if not isinstance(accuracy, (Tolerance, AccuracyMode)):
    raise NotImplementedError(f"Accuracy {accuracy} not supported; give a lax.Tolerance or "
                              "a lax.AccuracyMode")
  return {"accuracy": accuracy}


def annotate(result: ir.Value, accuracy) -> ir.Value:
  """Sets the `result_accuracy` attribute of the op that made `result`."""
  if accuracy is None or accuracy is AccuracyMode.DEFAULT:
    return result
  if isinstance(accuracy, AccuracyMode):
    text = f"mode = #mhlo.result_accuracy_mode<{accuracy.name}>"
  else:
    text = (f"atol = {float(accuracy.atol):e}, rtol = {float(accuracy.rtol):e}, "
            f"ulps = {int(accuracy.ulps)}, mode = #mhlo.result_accuracy_mode<TOLERANCE>")
  result.owner.attributes["result_accuracy"] = ir.Attribute.parse(
      f"#mhlo.result_accuracy<{text}>")
  return result
