import sys, collections, functools, dataclasses, pickle
if sys.argv[1]=='m':
  import minijax as jax, minijax.numpy as jnp
else:
  import jax, jax.numpy as jnp
tu = jax.tree_util
def show(n, f):
  try: print(n, f())
  except Exception as e: print(n, 'ERR', type(e).__name__, str(e).split('\n')[0][:120])
Point = collections.namedtuple('Point', 'x y')
tree = {'a': [1, (2, None)], 'b': Point(3, 4), 'c': collections.OrderedDict([('z', 5), ('y', 6)]), 'd': collections.defaultdict(int, {'q': 7})}
show('flatten', lambda: tu.tree_flatten(tree)[0]); show('structure', lambda: str(tu.tree_structure(tree)))
show('leaves none', lambda: tu.tree_leaves([None, 1], is_leaf=lambda x: x is None))
show('paths', lambda: [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(tree)[0]])
show('keystr simple', lambda: [tu.keystr(p, simple=True, separator='/') for p, _ in tu.tree_flatten_with_path(tree)[0]])
show('map none', lambda: tu.tree_map(lambda x: x * 2, tree))
show('map mismatch', lambda: tu.tree_map(lambda x, y: x, [1, 2], [1, [2]]))
show('map dict keys', lambda: tu.tree_map(lambda x, y: x + y, {'a': 1, 'b': 2}, {'b': 3, 'a': 4}))
show('transpose', lambda: tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0, 0)), [(1, 2, 3), (4, 5, 6)]))
show('all', lambda: tu.tree_all([True, (1, 0)])); show('reduce', lambda: tu.tree_reduce(lambda a, b: a + b, [1, [2, 3]], 10))
show('unflatten', lambda: tu.tree_unflatten(tu.tree_structure((1, [2])), ['a', 'b']))
show('children', lambda: [str(c) for c in tu.treedef_children(tu.tree_structure((1, [2, 3])))])
show('num_leaves', lambda: (tu.tree_structure(tree).num_leaves, tu.tree_structure(tree).num_nodes))
show('treedef eq', lambda: tu.tree_structure([1, 2]) == tu.tree_structure([3, 4]))
show('pickle treedef', lambda: str(pickle.loads(pickle.dumps(tu.tree_structure(tree)))))
show('Partial', lambda: tu.tree_leaves(tu.Partial(lambda a, b: a + b, 1.0)))
show('Partial call', lambda: jax.jit(lambda p: p(2.))(tu.Partial(lambda a, b: a + b, 1.0)))
@dataclasses.dataclass
class DC:
  x: float
  y: str
tu.register_dataclass(DC, data_fields=['x'], meta_fields=['y'])
show('dataclass', lambda: (tu.tree_leaves(DC(1., 'a')), str(tu.tree_structure(DC(1., 'a')))))
class C:
  def __init__(self, a, b): self.a, self.b = a, b
tu.register_pytree_with_keys(C, lambda c: (((tu.GetAttrKey('a'), c.a), (tu.GetAttrKey('b'), c.b)), None), lambda _, ch: C(*ch))
show('with keys', lambda: [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(C(1, [2]))[0]])
show('flatten_up_to', lambda: tu.tree_structure([0, 0]).flatten_up_to([1, [2, 3]]))
show('tree_broadcast', lambda: tu.tree_broadcast([1, 2], [[0, 0], (0, 0, 0)]))
show('prefix error', lambda: jax.vmap(lambda x: x, in_axes=[0, 0])([jnp.ones(2)]))
show('static', lambda: str(tu.tree_structure(tu.register_static(type('S', (), {'__eq__': lambda s, o: True, '__hash__': lambda s: 0}))())))
show('tree.map', lambda: jax.tree.map(lambda x: x + 1, {'a': 1})); show('tree.leaves_with_path', lambda: len(jax.tree.leaves_with_path(tree)))
show('default_registry', lambda: type(tu.default_registry).__name__)
show('treedef from tuple', lambda: str(tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1])])))
show('is_leaf path', lambda: tu.tree_leaves_with_path({'a': [1, 2]}, is_leaf=lambda p, x: isinstance(x, list), is_leaf_takes_path=True))
show('all_leaves', lambda: (tu.all_leaves([1, 2]), tu.all_leaves([[1]])))
show('SequenceKey', lambda: str(tu.SequenceKey(1)) + str(tu.DictKey('a')) + str(tu.GetAttrKey('x')) + str(tu.FlattenedIndexKey(2)))
