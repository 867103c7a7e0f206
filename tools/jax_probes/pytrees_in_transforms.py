import sys, collections, dataclasses, functools, pickle, numpy as np
if sys.argv[1] == 'm':
  import minijax as jax, minijax.numpy as jnp
else:
  import jax, jax.numpy as jnp
tu = jax.tree_util

def show(o):
  if hasattr(o, 'dtype') and hasattr(o, 'shape'):
    return f"{np.asarray(o).dtype}{list(np.shape(o))} " + ' '.join(f"{float(v):.4g}" for v in np.ravel(o)[:6])
  return repr(o)[:80]

def case(name, fn):
  try:
    out = fn()
    leaves, tree = tu.tree_flatten(out, is_leaf=lambda v: v is None)
    print(name, '|', str(tree).replace('jax.', '').replace('minijax.', '')[:100], '|', ' || '.join(show(l) for l in leaves))
  except Exception as e:
    print(name, 'raises', type(e).__name__, str(e).splitlines()[0][:110].replace('minijax', 'jax') if str(e) else '')

Point = collections.namedtuple('Point', 'x y')

@functools.partial(tu.register_dataclass, data_fields=['a', 'b'], meta_fields=['n'])
@dataclasses.dataclass
class DC:
  a: object
  b: object
  n: int

@tu.register_pytree_node_class
class Box:
  def __init__(self, v, tag):
    self.v, self.tag = v, tag
  def tree_flatten(self):
    return (self.v,), self.tag
  @classmethod
  def tree_unflatten(cls, tag, children):
    return cls(children[0], tag)
  def __repr__(self):
    return f'Box({self.tag})'

class Keyed:
  def __init__(self, a, b):
    self.a, self.b = a, b
tu.register_pytree_with_keys(Keyed, lambda k: (((tu.GetAttrKey('a'), k.a), (tu.GetAttrKey('b'), k.b)), None),
                             lambda aux, ch: Keyed(*ch))

x = jnp.arange(3.)
tree = {'p': Point(x, 2 * x), 'd': DC(x, None, 3), 'l': [x, (x,)], 'b': Box(x, 'T'), 'n': None}
case('flatten', lambda: len(tu.tree_leaves(tree)))
case('structure', lambda: str(tu.tree_structure(tree)).count('*'))
case('jit tree', lambda: jax.jit(lambda t: tu.tree_map(lambda v: v * 2, t))(tree))
case('jit dc meta static', lambda: jax.jit(lambda d: d.a * d.n)(DC(x, None, 4)))
case('grad tree', lambda: jax.grad(lambda t: sum(jnp.sum(v ** 2) for v in tu.tree_leaves(t)))(tree))
case('vmap tree', lambda: jax.vmap(lambda t: tu.tree_map(jnp.sum, t))(tree))
case('vmap prefix', lambda: jax.vmap(lambda p, s: p.x * s, in_axes=(Point(0, None), None))(Point(x, 1.), 2.))
case('vmap dc axes', lambda: jax.vmap(lambda d: d.a + 1, in_axes=(DC(0, None, 3),))(DC(x, None, 3)))
case('vmap out_axes tree', lambda: jax.vmap(lambda v: {'a': v, 'b': v * 2}, out_axes={'a': 0, 'b': None})(x))
case('vmap none leaf', lambda: jax.vmap(lambda a, b: a, in_axes=(0, None))(x, None))
case('jit none arg', lambda: jax.jit(lambda a, b: a if b is None else b)(x, None))
case('jit static dc', lambda: jax.jit(lambda n, v: v * n, static_argnums=0)(3, x))
case('grad namedtuple', lambda: jax.grad(lambda p: p.x.sum() * p.y.sum())(Point(x, x + 1)))
case('grad keyed', lambda: jax.grad(lambda k: (k.a * k.b).sum())(Keyed(x, x)))
case('jacfwd tree', lambda: jax.jacfwd(lambda p: {'o': p.x * p.y})(Point(x, x)))
case('jacrev tree out', lambda: jax.jacrev(lambda v: Point(v.sum(), v ** 2))(x))
case('hessian dict', lambda: jax.hessian(lambda d: (d['a'] ** 3).sum())({'a': x}))
case('scan tree carry', lambda: jax.lax.scan(lambda c, v: (Point(c.x + v, c.y * 2), c.x), Point(0., 1.), x))
case('cond tree', lambda: jax.lax.cond(True, lambda t: t, lambda t: tu.tree_map(jnp.negative, t), Point(x, x)))
case('while tree', lambda: jax.lax.while_loop(lambda s: s['i'] < 3, lambda s: {'i': s['i'] + 1, 'v': s['v'] * 2}, {'i': 0, 'v': x}))
case('custom_jvp tree', lambda: jax.jvp(jax.custom_jvp(lambda p: p.x * p.y), (Point(x, x),), (Point(x, x),)))
case('leaves with path', lambda: [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree)])
case('flatten with path', lambda: [tu.keystr(p, simple=True, separator='/') for p, _ in tu.tree_flatten_with_path(tree)[0]])
case('map with path', lambda: tu.tree_map_with_path(lambda p, v: len(p), tree))
case('keyed paths', lambda: [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Keyed(1, 2))])
case('all_leaves', lambda: (tu.all_leaves([1, 2]), tu.all_leaves([[1]])))
case('tree_transpose', lambda: tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0)), [(1, 2), (3, 4)]))
case('tree_reduce', lambda: tu.tree_reduce(lambda a, b: a + b, {'a': 1, 'b': [2, 3]}, 10))
case('tree_reduce is_leaf', lambda: tu.tree_reduce(lambda a, b: a + len(b), [[1], [2, 3]], 0, is_leaf=lambda v: isinstance(v, list) and len(v) and not isinstance(v[0], list)))
case('Partial', lambda: jax.jit(lambda f, v: f(v))(tu.Partial(jnp.add, 1.), x))
case('Partial tree', lambda: tu.tree_leaves(tu.Partial(jnp.add, x)))
case('treedef pickle', lambda: pickle.loads(pickle.dumps(tu.tree_structure({'a': [1, (2, 3)], 'b': Point(1, 2)}))) == tu.tree_structure({'a': [1, (2, 3)], 'b': Point(1, 2)}))
case('treedef children', lambda: len(tu.tree_structure({'a': 1, 'b': (2, 3)}).children()))
case('treedef num_nodes', lambda: (tu.tree_structure(tree).num_nodes, tu.tree_structure(tree).num_leaves))
case('treedef node_data', lambda: str(tu.tree_structure({'a': 1}).node_data()))
case('treedef flatten_up_to', lambda: tu.tree_structure([0, (0, 0)]).flatten_up_to([x, ({'k': 1}, None)]))
case('flatten_up_to mismatch', lambda: tu.tree_structure([0, 0]).flatten_up_to([1, 2, 3]))
case('tree_map mismatch', lambda: tu.tree_map(lambda a, b: a, [1, 2], [1, 2, 3]))
case('tree_map dict keys', lambda: tu.tree_map(lambda a, b: a, {'a': 1}, {'b': 1}))
case('tree_map none', lambda: tu.tree_map(lambda a, b: b, {'a': None}, {'a': 1}))
case('tree_map is_leaf', lambda: tu.tree_map(lambda v: len(v), [[1, 2], [3]], is_leaf=lambda v: isinstance(v, list) and all(isinstance(i, int) for i in v)))
case('dict order', lambda: tu.tree_leaves({'b': 1, 'a': 2, 'c': 0}))
case('ordered dict', lambda: tu.tree_leaves(collections.OrderedDict([('b', 1), ('a', 2)])))
case('defaultdict', lambda: str(tu.tree_structure(collections.defaultdict(list, {'a': 1}))))
case('unflatten', lambda: tu.tree_unflatten(tu.tree_structure(Point(0, 0)), [5, 6]))
case('unflatten wrong', lambda: tu.tree_unflatten(tu.tree_structure(Point(0, 0)), [5]))
case('jax.tree.map', lambda: jax.tree.map(lambda v: v + 1, {'a': 1}))
case('jax.tree.flatten_with_path', lambda: len(jax.tree.flatten_with_path({'a': 1})[0]))
case('jax.tree.broadcast', lambda: jax.tree.broadcast(1, {'a': 0, 'b': [0, 0]}))
case('jax.tree.reduce_associative', lambda: jax.tree.reduce_associative(lambda a, b: a + b, [1, 2, 3, 4]))
case('register_static', lambda: tu.tree_leaves(tu.register_static(type('S', (), {'__hash__': lambda s: 1, '__eq__': lambda s, o: True}))()))
case('jit namedtuple out', lambda: jax.jit(lambda v: Point(v, v))(x))
case('vmap in_axes list tree error', lambda: jax.vmap(lambda a: a, in_axes=[0])(x))
case('vmap in_axes wrong tree', lambda: jax.vmap(lambda a, b: a, in_axes=(0, 0, 0))(x, x))
case('keystr seq', lambda: tu.keystr((tu.SequenceKey(0), tu.DictKey('a'), tu.GetAttrKey('b'), tu.FlattenedIndexKey(2))))
case('path repr', lambda: str(tu.tree_leaves_with_path({'a': [1]})[0][0]))
case('tree_util.tree_all', lambda: (tu.tree_all([True, 1, []]), tu.tree_all([True, 0])))
case('tree_util.tree_flatten none', lambda: tu.tree_flatten([None, 1])[0])
case('register_dataclass auto', lambda: tu.tree_leaves(tu.register_dataclass(dataclasses.make_dataclass('Q', [('u', int), ('w', int, dataclasses.field(metadata={'static': True}))]))(1, 2)))
case('closure_convert tree', lambda: len(jax.closure_convert(lambda p: p.x * x, Point(1., 2.))[1]))
case('make_jaxpr tree', lambda: len(jax.make_jaxpr(lambda t: t['p'].x + t['l'][1][0])(tree).jaxpr.invars))
case('eval_shape tree', lambda: str(jax.eval_shape(lambda t: t['p'], tree)))
