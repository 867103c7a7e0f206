import sys, numpy as np
from scipy.spatial.transform import Rotation as SR
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
  from minijax.scipy.spatial.transform import Rotation as R, Slerp
else:
  import jax, jax.numpy as jnp
  from jax.scipy.spatial.transform import Rotation as R, Slerp
jax.config.update('jax_enable_x64', True)
rng=np.random.RandomState(0)
q=rng.randn(5,4); q1=rng.randn(4)
def p(tag, x): print(tag, np.round(np.asarray(x), 9).tolist())
r=R.from_quat(q); s=R.from_quat(q1)
p('quat', r.as_quat()); p('canon', r.as_quat(canonical=True)); p('sf', s.as_quat(scalar_first=True))
p('mat', r.as_matrix()); p('fm', R.from_matrix(r.as_matrix()).as_quat()); p('rv', r.as_rotvec()); p('rvd', s.as_rotvec(degrees=True))
p('frv', R.from_rotvec(rng.randn(3,3)).as_quat()); p('frv0', R.from_rotvec(np.array([1e-5,0,0])).as_quat())
p('mrp', r.as_mrp()); p('fmrp', R.from_mrp(rng.randn(2,3)).as_quat())
p('mag', r.magnitude()); p('inv', r.inv().as_quat()); p('mul', (r*s).as_quat()); p('mul2', (s*r).as_quat())
p('apply', r.apply(np.ones(3))); p('apply2', s.apply(rng.randn(4,3), inverse=True)); p('apply3', r.apply(rng.randn(5,3)))
for seq in ['xyz','ZYX','xzx','YXY','zyz','XYZ','yxz','ZXY']:
  p('eu'+seq, r.as_euler(seq)); p('eud'+seq, R.from_euler(seq, rng.randn(2,3), degrees=True).as_quat())
p('eu1', R.from_euler('z', 0.3).as_quat()); p('eu2', R.from_euler('xy', np.array([0.3,0.5])).as_quat())
lock=R.from_euler('xyz', np.array([[0.3, np.pi/2, 0.2],[0.1,0.,0.4]]))
p('lockxyz', lock.as_euler('xyz')); p('lockXYZ', lock.as_euler('XYZ'));p('lockzxz', R.from_euler('zxz', np.array([0.3,0.,0.2])).as_euler('zxz'))
p('mean', r.mean().as_quat()); p('meanw', r.mean(np.arange(5.)).as_quat())
p('id', R.identity().as_quat()); p('cat', R.concatenate([r, r[:2]]).as_quat())
p('getitem', r[1:3].as_quat()); print(len(r), r.single, s.single)
sl=Slerp.init(np.array([0.,1,3]), r[:3]); p('slerp', sl(np.array([0, 0.5, 1, 2, 3])).as_quat()); p('slerp1', sl(0.7).as_quat())
p('jit', jax.jit(lambda r: r.as_euler('xyz'))(r))
p('grad', jax.grad(lambda a: R.from_euler('xyz', a).as_matrix().sum())(np.array([0.1,0.2,0.3])))
p('f32', R.from_euler('x', 0.5).quat.dtype == np.float64)
