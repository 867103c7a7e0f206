"""`minijax.scipy.spatial.transform`: `Rotation` and `Slerp`, as in scipy.

A `Rotation` holds unit quaternions `(x, y, z, w)` (scalar last) in an array of shape (4,)
for one rotation or (N, 4) for N; every conversion works on the last axis of that array, so
single rotations, stacks of them and broadcasting between the two take one code path.
`r * s` applies `s` first, then `r` (the Hamilton product).  Both classes are named tuples,
so they are pytrees and pass through `jit`, `vmap` and `grad`.

Euler angles use the direct quaternion method of Bernardes and Viollet (2022), as scipy
does; at gimbal lock the third angle is 0.  `from_matrix` picks the best conditioned of the
four ways to read a quaternion off the matrix (Shepperd's method)."""
from __future__ import annotations

import re
import typing

import numpy as np

from minijax import numpy as jnp
from minijax.numpy import _util

_GIMBAL_EPS = 1e-7


def _inexact(name, x):
  return _util.promote_inexact(f"minijax.scipy.spatial.transform.{name}", x)[0]


def _norm(v):
  return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalized(q):
  return q / _norm(q)[..., None]


def _compose(p, q):
  """The Hamilton product p q: the rotation q, then p."""
  pv, pw, qv, qw = p[..., :3], p[..., 3:], q[..., :3], q[..., 3:]
  vector = pw * qv + qw * pv + jnp.cross(pv, qv)
  scalar = pw * qw - jnp.sum(pv * qv, axis=-1, keepdims=True)
  return jnp.concatenate([vector, scalar], axis=-1)


def _as_matrix(q):
  x, y, z, w = (q[..., i] for i in range(4))
  rows = [[w * w + x * x - y * y - z * z, 2 * (x * y - z * w), 2 * (x * z + y * w)],
          [2 * (x * y + z * w), w * w - x * x + y * y - z * z, 2 * (y * z - x * w)],
          [2 * (x * z - y * w), 2 * (y * z + x * w), w * w - x * x - y * y + z * z]]
  return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)


def _from_matrix(m):
  """Shepperd's method: of the four formulas, the one whose leading term (a diagonal entry
  or the trace) is largest, so that it never divides by a small number."""
  trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
  candidates = []
  for i in range(3):
    j, k = (i + 1) % 3, (i + 2) % 3
    q = [None] * 4
    q[i] = 1 - trace + 2 * m[..., i, i]
    q[j] = m[..., j, i] + m[..., i, j]
    q[k] = m[..., k, i] + m[..., i, k]
    q[3] = m[..., k, j] - m[..., j, k]
    candidates.append(jnp.stack(q, axis=-1))
  candidates.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                               m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
  leading = jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], axis=-1)
  best = jnp.argmax(leading, axis=-1)[..., None, None]
  return _normalized(jnp.take_along_axis(jnp.stack(candidates, axis=-2), best, axis=-2)[..., 0, :])


def _with_positive_scalar(q):
  return jnp.where(q[..., 3:] < 0, -q, q)


def _rotvec_scale(angle, small, large):
  """`large(angle)`, replaced near 0 by its Taylor series `small(angle^2)`."""
  safe = jnp.where(angle <= 1e-3, 1.0, angle)
  return jnp.where(angle <= 1e-3, small(angle * angle), large(safe))


def _from_rotvec(rotvec):
  angle = _norm(rotvec)
  scale = _rotvec_scale(angle, lambda a2: 0.5 - a2 / 48 + a2 * a2 / 3840,
                        lambda a: jnp.sin(a / 2) / a)
  return jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(q):
  q = _with_positive_scalar(q)
  angle = 2 * jnp.arctan2(_norm(q[..., :3]), q[..., 3])
  scale = _rotvec_scale(angle, lambda a2: 2 + a2 / 12 + 7 * a2 * a2 / 2880,
                        lambda a: a / jnp.sin(a / 2))
  return scale[..., None] * q[..., :3]


def _canonical(q):
  """-q where the first nonzero of (w, x, y, z) is negative: one quaternion per rotation."""
  x, y, z, w = (q[..., i] for i in range(4))
  flip = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
  return jnp.where(flip[..., None], -q, q)


def _axes(seq: str, name: str, allowed_lengths: tuple[int, ...]):
  """`(axes, intrinsic)` of an Euler sequence such as "xyz" (extrinsic) or "ZYX" (intrinsic)."""
  if len(seq) not in allowed_lengths:
    raise ValueError(f"Rotation.{name}: expected a sequence of "
                     f"{' or '.join(map(str, allowed_lengths))} axes, got {seq!r}")
  intrinsic = re.fullmatch(r"[XYZ]+", seq) is not None
  if not intrinsic and re.fullmatch(r"[xyz]+", seq) is None:
    raise ValueError(f"Rotation.{name}: expected axes from ['x', 'y', 'z'] (extrinsic) or "
                     f"['X', 'Y', 'Z'] (intrinsic), got {seq!r}")
  if any(a == b for a, b in zip(seq, seq[1:])):
    raise ValueError(f"Rotation.{name}: expected consecutive axes to be different, got {seq!r}")
  return ["xyz".index(a) for a in seq.lower()], intrinsic


def _elementary(axis: int, angle):
  half = angle / 2
  parts = [jnp.zeros_like(half)] * 3 + [jnp.cos(half)]
  parts[axis] = jnp.sin(half)
  return jnp.stack(parts, axis=-1)


def _as_euler(q, axes: list[int], intrinsic: bool):
  """Bernardes and Viollet's direct method, for an extrinsic sequence i, j, k (an intrinsic
  one is the reversed extrinsic one, with its first and third angles swapped)."""
  if intrinsic:
    axes = axes[::-1]
  i, j, k = axes
  symmetric = i == k
  if symmetric:
    k = 3 - i - j
  sign = (i - j) * (j - k) * (k - i) // 2
  w = q[..., 3]
  if symmetric:
    a, b, c, d = w, q[..., i], q[..., j], sign * q[..., k]
  else:
    a, b, c, d = w - q[..., j], q[..., i] + sign * q[..., k], q[..., j] + w, sign * q[..., k] - q[..., i]
  middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
  half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
  at_zero = jnp.abs(middle) <= _GIMBAL_EPS
  at_pi = jnp.abs(middle - np.pi) <= _GIMBAL_EPS
  first, third = half_sum - half_diff, half_sum + half_diff
  # at gimbal lock, angle 2 (in the output's order) is 0 and angle 0 carries the rotation
  locked = jnp.where(at_zero, 2 * half_sum, 2 * half_diff * (1 if intrinsic else -1))
  lock = at_zero | at_pi
  angle_0, angle_2 = (third, first) if intrinsic else (first, third)
  angle_0 = jnp.where(lock, locked, angle_0)
  angle_2 = jnp.where(lock, 0, angle_2)
  if not symmetric:
    if intrinsic:
      angle_0 = sign * angle_0
    else:
      angle_2 = sign * angle_2
    middle = middle - np.pi / 2
  angles = jnp.stack([angle_0, middle, angle_2], axis=-1)
  return (angles + np.pi) % (2 * np.pi) - np.pi


class Rotation(typing.NamedTuple):
  """Rotations in 3 dimensions, one (`quat` of shape (4,)) or several ((N, 4))."""
  quat: typing.Any

  @classmethod
  def from_quat(cls, quat):
    return cls(_normalized(_inexact("Rotation.from_quat", quat)))

  @classmethod
  def from_matrix(cls, matrix):
    return cls(_from_matrix(_inexact("Rotation.from_matrix", matrix)))

  @classmethod
  def from_rotvec(cls, rotvec, degrees: bool = False):
    rotvec = _inexact("Rotation.from_rotvec", rotvec)
    return cls(_from_rotvec(jnp.deg2rad(rotvec) if degrees else rotvec))

  @classmethod
  def from_mrp(cls, mrp):
    mrp = _inexact("Rotation.from_mrp", mrp)
    s = jnp.sum(mrp * mrp, axis=-1, keepdims=True)
    return cls(jnp.concatenate([2 * mrp, 1 - s], axis=-1) / (1 + s))

  @classmethod
  def from_euler(cls, seq: str, angles, degrees: bool = False):
    """`angles` (one per axis of `seq`, in a last axis of that length; for one axis, a
    scalar or a vector of angles) about the axes of `seq`: lower case rotates about the
    fixed axes (extrinsic), upper case about the rotating ones (intrinsic)."""
    axes, intrinsic = _axes(seq, "from_euler", (1, 2, 3))
    angles = jnp.atleast_1d(_inexact("Rotation.from_euler", angles))
    if len(axes) == 1 and angles.shape[-1] != 1:
      angles = angles[..., None]
    if angles.shape[-1] != len(axes):
      raise ValueError(f"Rotation.from_euler: expected angles with a last axis of "
                       f"{len(axes)} for {seq!r}, got shape {angles.shape}")
    if degrees:
      angles = jnp.deg2rad(angles)
    q = _elementary(axes[0], angles[..., 0])
    for n, axis in enumerate(axes[1:], 1):
      e = _elementary(axis, angles[..., n])
      q = _compose(q, e) if intrinsic else _compose(e, q)
    return cls(q)

  @classmethod
  def identity(cls, num: int | None = None, dtype=float):
    quat = jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
    return cls(quat if num is None else jnp.tile(quat, (num, 1)))

  @classmethod
  def random(cls, random_key, num: int | None = None):
    """Rotations drawn uniformly (normal 4-vectors, normalized)."""
    from minijax import random
    return cls.from_quat(random.normal(random_key, (4,) if num is None else (num, 4)))

  @classmethod
  def concatenate(cls, rotations: typing.Sequence[Rotation]):
    return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

  @property
  def single(self) -> bool:
    return self.quat.ndim == 1

  def __len__(self):
    if self.single:
      raise TypeError("Single rotation has no len().")
    return self.quat.shape[0]

  def __getitem__(self, index):
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[index])

  def __mul__(self, other: Rotation) -> Rotation:
    return Rotation.from_quat(_compose(self.quat, other.quat))

  def inv(self) -> Rotation:
    return Rotation(self.quat * jnp.array([-1, -1, -1, 1], self.quat.dtype))

  def magnitude(self):
    """The angle of each rotation, in [0, pi]."""
    return 2 * jnp.arctan2(_norm(self.quat[..., :3]), jnp.abs(self.quat[..., 3]))

  def apply(self, vectors, inverse: bool = False):
    """The vectors (3,) or (N, 3) rotated (by the inverse, with `inverse`)."""
    m = self.as_matrix()
    m = jnp.where(inverse, jnp.swapaxes(m, -1, -2), m)
    return jnp.matmul(m, jnp.asarray(vectors)[..., None])[..., 0]

  def as_quat(self, canonical: bool = False, scalar_first: bool = False):
    q = _canonical(self.quat) if canonical else self.quat
    return jnp.roll(q, 1, axis=-1) if scalar_first else q

  def as_matrix(self):
    return _as_matrix(self.quat)

  def as_rotvec(self, degrees: bool = False):
    rotvec = _as_rotvec(self.quat)
    return jnp.rad2deg(rotvec) if degrees else rotvec

  def as_mrp(self):
    q = _with_positive_scalar(self.quat)
    return q[..., :3] / (1 + q[..., 3:])

  def as_euler(self, seq: str, degrees: bool = False):
    axes, intrinsic = _axes(seq, "as_euler", (3,))
    angles = _as_euler(self.quat, axes, intrinsic)
    return jnp.rad2deg(angles) if degrees else angles

  def mean(self, weights=None):
    """The rotation minimizing the weighted sum of squared chordal distances: the
    eigenvector of the largest eigenvalue of sum w q q^T."""
    if self.single:
      raise TypeError("Rotation.mean: a single rotation has no mean; concatenate rotations")
    w = (jnp.ones(len(self), self.quat.dtype) if weights is None
         else jnp.asarray(weights, self.quat.dtype))
    if w.ndim != 1 or w.shape[0] != len(self):
      raise ValueError(f"Rotation.mean: expected one weight per rotation ({len(self)}), got "
                       f"shape {w.shape}")
    _, vectors = jnp.linalg.eigh((self.quat.T * w) @ self.quat)
    return Rotation(vectors[:, -1])


class Slerp(typing.NamedTuple):
  """Spherical linear interpolation between rotations at increasing key times."""
  times: typing.Any
  timedelta: typing.Any
  rotations: Rotation
  rotvecs: typing.Any

  @classmethod
  def init(cls, times, rotations: Rotation) -> Slerp:
    if not isinstance(rotations, Rotation):
      raise TypeError(f"Slerp.init: rotations must be a Rotation, got {type(rotations).__name__}")
    if rotations.single or len(rotations) < 2:
      raise ValueError("Slerp.init: rotations must be a sequence of at least 2 rotations")
    times = jnp.asarray(times, rotations.quat.dtype)
    if times.ndim != 1 or times.shape[0] != len(rotations):
      raise ValueError(f"Slerp.init: expected one time per rotation ({len(rotations)}) in a "
                       f"1-dimensional array, got shape {times.shape}")
    starts, ends = Rotation(rotations.quat[:-1]), Rotation(rotations.quat[1:])
    return cls(times, jnp.diff(times), starts, (starts.inv() * ends).as_rotvec())

  def __call__(self, times) -> Rotation:
    times = jnp.asarray(times, self.times.dtype)
    if times.ndim > 1:
      raise ValueError(f"Slerp: times must be at most 1-dimensional, got shape {times.shape}")
    at = jnp.atleast_1d(times)
    segment = jnp.maximum(jnp.searchsorted(self.times, at) - 1, 0)
    fraction = (at - self.times[segment]) / self.timedelta[segment]
    result = self.rotations[segment] * Rotation.from_rotvec(self.rotvecs[segment] * fraction[:, None])
    return result[0] if times.ndim == 0 else result


__all__ = ["Rotation", "Slerp"]
