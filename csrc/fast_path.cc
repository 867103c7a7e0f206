// The commonest calls of a jitted function, `f(x)` or `f(x, y, ...)` with Arrays only (and
// static arguments, for a function that has some), served in C: the module
// `minijax.staging._native`, whose `FastPath` is what `jit` returns calls first (see
// `staging/jit.py`, `_jitted`).  It does what the Python fast path does for such a call, in
// the same order, without a Python frame or the Python `Array.__init__`:
//
//   * only under the eval trace (`context.trace` is an `EvalTrace`), for positional
//     arguments (at most kMaxArgs), the dynamic ones of exactly the `Array` type,
//     uncommitted, whose buffers are there;
//   * the key is the Python key functions' (see `Entry`); the entry, `caches.fast[key]`,
//     must be one that runs here (an executable's `dispatch_record`, with `execute` set);
//   * jaxlib's garbage is collected, `execute([*consts, *buffers])
//     .consume_with_handlers(handlers)` runs, and one output becomes an `Array(out,
//     out_aval, device)`, its slots set through the class's own slot descriptors (several
//     go to the entry's `finish`).
//
// Every other call, and every miss, goes to `fallback` (the Python `jitted`) with the same
// arguments; so does every call while a flag's `with` block is open in some thread
// (`local_blocks[0]`, minijax.config.LOCAL_BLOCKS, is not 0), as the thread's flags then
// select the entries.  An exception from the execution goes to `failed(entry_failed, args, error)`,
// a Python function that translates and raises it as the Python fast path would.
//
// `ArrayFactory`, `array_factory(Array, slots)`, makes the result Arrays: called as
// `factory(buffer, aval, device)` it is `Array(buffer, aval, device)` without the Python
// `__init__` (the Python fast path uses it too).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>

#include "callable_type.h"

namespace {

// The slots of minijax's Array, in the order `FastPath` takes their descriptors.
enum Slot { kBuffer, kAval, kCommitted, kDevice, kNpy, kSharding, kNumSlots };

struct ArrayFactory {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* array_type;        // Array
  PyObject* slots[kNumSlots];  // its slot descriptors
};

struct FastPath {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* caches;           // JitCaches: `fast` is read per call (flag changes swap it)
  PyObject* context;          // the thread-local trace context
  PyObject* eval_trace;       // the EvalTrace type
  PyObject* factory;          // an ArrayFactory
  PyObject* collect_garbage;  // jaxlib's collect_garbage
  PyObject* fallback;         // the Python dispatch: fallback(*args, **kwargs)
  PyObject* failed;           // failed(entry_failed, args, error): raises
  PyObject* static_mask;      // static_mask(n) -> bytes, or None without static arguments
  PyObject* static_masks;     // n -> its static_mask(n)
  PyObject* local_blocks;     // a list: [the number of flag blocks open in all threads]
};

PyObject* g_trace_name;
PyObject* g_fast_name;
PyObject* g_consume_name;

inline PyObject* GetSlot(ArrayFactory* f, Slot slot, PyObject* obj) {
  PyObject* d = f->slots[slot];
  return Py_TYPE(d)->tp_descr_get(d, obj, f->array_type);  // new reference, or null
}

inline int SetSlot(ArrayFactory* f, Slot slot, PyObject* obj, PyObject* value) {
  PyObject* d = f->slots[slot];
  return Py_TYPE(d)->tp_descr_set(d, obj, value);
}

PyObject* NewArray(ArrayFactory* f, PyObject* buffer, PyObject* aval, PyObject* device) {
  auto* type = reinterpret_cast<PyTypeObject*>(f->array_type);
  PyObject* array = type->tp_alloc(type, 0);
  if (array == nullptr) return nullptr;
  if (SetSlot(f, kBuffer, array, buffer) < 0 || SetSlot(f, kAval, array, aval) < 0 ||
      SetSlot(f, kDevice, array, device) < 0 || SetSlot(f, kNpy, array, Py_None) < 0 ||
      SetSlot(f, kSharding, array, Py_None) < 0 || SetSlot(f, kCommitted, array, Py_False) < 0) {
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

PyObject* ArrayFactoryCall(PyObject* self, PyObject* const* args, size_t nargsf,
                           PyObject* kwnames) {
  if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != nullptr) {
    PyErr_SetString(PyExc_TypeError, "an Array factory takes (buffer, aval, device)");
    return nullptr;
  }
  return NewArray(reinterpret_cast<ArrayFactory*>(self), args[0], args[1], args[2]);
}

constexpr Py_ssize_t kMaxArgs = 256;  // as the Python key functions unroll (fast_keys.py)

// The static positions of a call with `n` positional arguments: bytes, one per position,
// 1 where the argument is static (a borrowed reference, cached per `n`), or null with the
// error set.
PyObject* StaticMask(FastPath* self, Py_ssize_t n) {
  PyObject* count = PyLong_FromSsize_t(n);
  if (count == nullptr) return nullptr;
  PyObject* mask = PyDict_GetItemWithError(self->static_masks, count);
  if (mask == nullptr && !PyErr_Occurred()) {
    PyObject* made = PyObject_CallOneArg(self->static_mask, count);
    if (made != nullptr && PyBytes_Check(made) && PyBytes_GET_SIZE(made) == n &&
        PyDict_SetItem(self->static_masks, count, made) == 0) {
      mask = made;  // the dict holds it
    } else if (made != nullptr && !PyErr_Occurred()) {
      PyErr_SetString(PyExc_SystemError, "static_mask(n) must give n bytes");
    }
    Py_XDECREF(made);
  }
  Py_DECREF(count);
  return mask;
}

// The entry of the call `args` in `caches.fast` when it can run here (a new reference),
// with the dynamic arguments' buffers in `buffers` (after the entry's constants) and, for a
// function with static arguments, the dynamic arguments in `dynamic`; null with no error
// set when it cannot run here, or with the error set when reading failed.  The key is the
// one the Python key functions make (fast_keys.py): the aval of a single argument; else
// the tuple of the avals ended by whether any is committed (False here), started by `n`
// and with each static argument and its type in its place when the function has some.
PyObject* Entry(FastPath* self, PyObject* const* args, Py_ssize_t n, PyObject** buffers,
                PyObject** dynamic) {
  auto* f = reinterpret_cast<ArrayFactory*>(self->factory);
  PyObject* trace = PyObject_GetAttr(self->context, g_trace_name);
  if (trace == nullptr) return nullptr;
  const bool eval = reinterpret_cast<PyObject*>(Py_TYPE(trace)) == self->eval_trace;
  Py_DECREF(trace);
  if (!eval) return nullptr;
  const char* mask = nullptr;
  Py_ssize_t n_static = 0;
  if (self->static_mask != Py_None) {
    PyObject* bytes = StaticMask(self, n);
    if (bytes == nullptr) return nullptr;
    mask = PyBytes_AS_STRING(bytes);
    for (Py_ssize_t i = 0; i < n; ++i) n_static += mask[i] != 0;
  }
  const Py_ssize_t n_dynamic = n - n_static;
  const bool bare = mask == nullptr && n == 1;  // the key is the aval itself
  PyObject* key = bare ? nullptr : PyTuple_New((mask ? 1 : 0) + n + n_static + 1);
  PyObject* arg_buffers = PyList_New(n_dynamic);
  PyObject* dyn = mask ? PyTuple_New(n_dynamic) : nullptr;
  if ((!bare && key == nullptr) || arg_buffers == nullptr || (mask && dyn == nullptr)) {
    Py_XDECREF(key);
    Py_XDECREF(arg_buffers);
    Py_XDECREF(dyn);
    return nullptr;
  }
  Py_ssize_t k = 0, d = 0;  // the next places in the key and among the dynamic arguments
  if (mask) PyTuple_SET_ITEM(key, k++, PyLong_FromSsize_t(n));
  bool plain = !mask || PyTuple_GET_ITEM(key, 0) != nullptr;
  for (Py_ssize_t i = 0; plain && i < n; ++i) {
    PyObject* x = args[i];
    if (mask && mask[i]) {
      Py_INCREF(x);
      PyTuple_SET_ITEM(key, k++, x);
      Py_INCREF(Py_TYPE(x));
      PyTuple_SET_ITEM(key, k++, reinterpret_cast<PyObject*>(Py_TYPE(x)));
      continue;
    }
    plain = reinterpret_cast<PyObject*>(Py_TYPE(x)) == f->array_type;
    PyObject* committed = plain ? GetSlot(f, kCommitted, x) : nullptr;
    PyObject* buffer = committed == Py_False ? GetSlot(f, kBuffer, x) : nullptr;
    PyObject* aval = buffer != nullptr ? GetSlot(f, kAval, x) : nullptr;
    Py_XDECREF(committed);
    plain = aval != nullptr;  // uncommitted (committed calls have keys of their own), not deleted
    if (!plain) {
      Py_XDECREF(buffer);
      break;
    }
    PyList_SET_ITEM(arg_buffers, d, buffer);
    if (dyn) {
      Py_INCREF(x);
      PyTuple_SET_ITEM(dyn, d, x);
    }
    ++d;
    if (bare) {
      key = aval;
    } else {
      PyTuple_SET_ITEM(key, k++, aval);
    }
  }
  PyObject* entry = nullptr;
  if (plain) {
    if (!bare) {
      Py_INCREF(Py_False);
      PyTuple_SET_ITEM(key, k, Py_False);
    }
    PyObject* fast = PyObject_GetAttr(self->caches, g_fast_name);
    if (fast != nullptr) {
      entry = PyDict_Check(fast) ? PyDict_GetItemWithError(fast, key) : nullptr;  // (an
      Py_XINCREF(entry);  // unhashable static argument raises: the Python path says so)
      Py_DECREF(fast);
    }
  }
  Py_XDECREF(key);
  if (entry != nullptr && !(PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) >= 7 &&
                            PyTuple_GET_ITEM(entry, 0) != Py_None)) {  // not run here
    Py_CLEAR(entry);
  }
  if (entry != nullptr) {
    PyObject* consts = PyTuple_GET_ITEM(entry, 5);
    *buffers = consts == Py_None ? arg_buffers : PySequence_Concat(consts, arg_buffers);
    if (*buffers == nullptr) {
      Py_CLEAR(entry);
    } else {
      if (*buffers == arg_buffers) Py_INCREF(arg_buffers);
      *dynamic = dyn;
      dyn = nullptr;
    }
  }
  Py_DECREF(arg_buffers);
  Py_XDECREF(dyn);
  return entry;
}

// Runs the entry on `buffers` (the call `args`, whose dynamic arguments are `dynamic` when
// not null); the result, or null with the error set.
PyObject* Run(FastPath* self, PyObject* const* args, Py_ssize_t n, PyObject* entry,
              PyObject* buffers, PyObject* dynamic) {
  PyObject* garbage = PyObject_CallNoArgs(self->collect_garbage);
  if (garbage == nullptr) return nullptr;
  Py_DECREF(garbage);
  PyObject* results = PyObject_CallOneArg(PyTuple_GET_ITEM(entry, 0), buffers);
  PyObject* outs = nullptr;
  if (results != nullptr) {
    PyObject* call_args[] = {results, PyTuple_GET_ITEM(entry, 1)};
    outs = PyObject_VectorcallMethod(g_consume_name, call_args,
                                     2 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
    Py_DECREF(results);
  }
  if (outs == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;  // KeyboardInterrupt...
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != nullptr) PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    PyObject* call = dynamic;
    if (call != nullptr) {
      Py_INCREF(call);
    } else if ((call = PyTuple_New(n)) != nullptr) {
      for (Py_ssize_t i = 0; i < n; ++i) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(call, i, args[i]);
      }
    }
    PyObject* raised = call ? PyObject_CallFunctionObjArgs(self->failed, PyTuple_GET_ITEM(entry, 4),
                                                           call, value, nullptr)
                            : nullptr;
    Py_XDECREF(call);
    Py_XDECREF(value);
    Py_XDECREF(raised);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "the fast path's failed() returned");
    return nullptr;
  }
  PyObject* out_aval = PyTuple_GET_ITEM(entry, 2);
  if (out_aval == Py_None) {  // several outputs, or a pytree of them
    PyObject* out = PyObject_CallOneArg(PyTuple_GET_ITEM(entry, 6), outs);
    Py_DECREF(outs);
    return out;
  }
  if (!PyList_Check(outs) || PyList_GET_SIZE(outs) < 1) {
    Py_DECREF(outs);
    PyErr_SetString(PyExc_SystemError, "an execution returned no output");
    return nullptr;
  }
  PyObject* array = NewArray(reinterpret_cast<ArrayFactory*>(self->factory),
                             PyList_GET_ITEM(outs, 0), out_aval, PyTuple_GET_ITEM(entry, 3));
  Py_DECREF(outs);
  return array;
}

PyObject* FastPathCall(PyObject* self_obj, PyObject* const* args, size_t nargsf,
                       PyObject* kwnames) {
  auto* self = reinterpret_cast<FastPath*>(self_obj);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (kwnames == nullptr && n >= 1 && n <= kMaxArgs &&
      PyLong_AsSsize_t(PyList_GET_ITEM(self->local_blocks, 0)) == 0) {
    PyObject *buffers = nullptr, *dynamic = nullptr;
    PyObject* entry = Entry(self, args, n, &buffers, &dynamic);
    if (entry != nullptr) {
      PyObject* out = Run(self, args, n, entry, buffers, dynamic);
      Py_DECREF(entry);
      Py_DECREF(buffers);
      Py_XDECREF(dynamic);
      return out;
    }
    PyErr_Clear();  // the Python path says what went wrong, if anything did
  }
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

#define FAST_PATH_FIELDS(apply)                                                            \
  apply(caches) apply(context) apply(eval_trace) apply(factory) apply(collect_garbage) \
      apply(fallback) apply(failed) apply(static_mask) apply(static_masks) apply(local_blocks)

int FastPathTraverse(PyObject* self_obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<FastPath*>(self_obj);
#define VISIT(field) Py_VISIT(self->field);
  FAST_PATH_FIELDS(VISIT)
#undef VISIT
  return 0;
}

int FastPathClear(PyObject* self_obj) {
  auto* self = reinterpret_cast<FastPath*>(self_obj);
#define CLEAR(field) Py_CLEAR(self->field);
  FAST_PATH_FIELDS(CLEAR)
#undef CLEAR
  return 0;
}

void FastPathDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  FastPathClear(self);
  Py_TYPE(self)->tp_free(self);
}

PyTypeObject FastPathType = {PyVarObject_HEAD_INIT(nullptr, 0)};
PyTypeObject ArrayFactoryType = {PyVarObject_HEAD_INIT(nullptr, 0)};

int ArrayFactoryTraverse(PyObject* self_obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<ArrayFactory*>(self_obj);
  Py_VISIT(self->array_type);
  for (PyObject* slot : self->slots) Py_VISIT(slot);
  return 0;
}

int ArrayFactoryClear(PyObject* self_obj) {
  auto* self = reinterpret_cast<ArrayFactory*>(self_obj);
  Py_CLEAR(self->array_type);
  for (PyObject*& slot : self->slots) Py_CLEAR(slot);
  return 0;
}

void ArrayFactoryDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  ArrayFactoryClear(self);
  Py_TYPE(self)->tp_free(self);
}

// array_factory(array_type, slots) -> ArrayFactory; `slots` are the type's slot
// descriptors in `Slot` order.
PyObject* PyArrayFactory(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyType_Check(args[0]) || !PyTuple_Check(args[1]) ||
      PyTuple_GET_SIZE(args[1]) != kNumSlots) {
    PyErr_SetString(PyExc_TypeError, "array_factory(array_type, slots: tuple)");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < kNumSlots; ++i) {
    PyTypeObject* d = Py_TYPE(PyTuple_GET_ITEM(args[1], i));
    if (d->tp_descr_get == nullptr || d->tp_descr_set == nullptr) {
      PyErr_SetString(PyExc_TypeError, "array_factory: the slots must be data descriptors");
      return nullptr;
    }
  }
  auto* self = PyObject_GC_New(ArrayFactory, &ArrayFactoryType);
  if (self == nullptr) return nullptr;
  self->vectorcall = ArrayFactoryCall;
  Py_INCREF(args[0]);
  self->array_type = args[0];
  for (Py_ssize_t i = 0; i < kNumSlots; ++i) {
    self->slots[i] = PyTuple_GET_ITEM(args[1], i);
    Py_INCREF(self->slots[i]);
  }
  PyObject_GC_Track(self);
  return reinterpret_cast<PyObject*>(self);
}

// fast_path(caches, context, eval_trace, factory, collect_garbage, fallback, failed,
// static_mask, local_blocks) -> FastPath, `factory` an ArrayFactory, `static_mask` None for
// a function without static arguments, `local_blocks` a list of one int.
PyObject* PyFastPath(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 9 || !PyType_Check(args[2]) || Py_TYPE(args[3]) != &ArrayFactoryType ||
      !PyList_CheckExact(args[8]) || PyList_GET_SIZE(args[8]) != 1) {
    PyErr_SetString(PyExc_TypeError,
                    "fast_path(caches, context, eval_trace, factory: ArrayFactory, "
                    "collect_garbage, fallback, failed, static_mask, local_blocks: [int])");
    return nullptr;
  }
  PyObject* masks = PyDict_New();
  if (masks == nullptr) return nullptr;
  auto* self = PyObject_GC_New(FastPath, &FastPathType);
  if (self == nullptr) {
    Py_DECREF(masks);
    return nullptr;
  }
  self->vectorcall = FastPathCall;
  PyObject** fields[] = {&self->caches,          &self->context,  &self->eval_trace,
                         &self->factory,         &self->collect_garbage, &self->fallback,
                         &self->failed,          &self->static_mask, &self->local_blocks};
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    *fields[i] = args[i];
  }
  self->static_masks = masks;
  PyObject_GC_Track(self);
  return reinterpret_cast<PyObject*>(self);
}

PyMethodDef methods[] = {
    {"fast_path", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PyFastPath)),
     METH_FASTCALL, "fast_path(...) -> FastPath: jit's calls on Arrays in C (see the source)."},
    {"array_factory",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PyArrayFactory)), METH_FASTCALL,
     "array_factory(Array, slots) -> factory(buffer, aval, device): Arrays made in C."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_native",
                          "jit's commonest calls, on Arrays (and static arguments), in C.", -1,
                          methods};

}  // namespace

PyMODINIT_FUNC PyInit__native() {
  if (!ReadyCallableType(&FastPathType, "minijax.staging._native.FastPath", sizeof(FastPath),
                         offsetof(FastPath, vectorcall), FastPathTraverse, FastPathClear,
                         FastPathDealloc, "jit's calls on Arrays in C (see the source).") ||
      !ReadyCallableType(&ArrayFactoryType, "minijax.staging._native.ArrayFactory",
                         sizeof(ArrayFactory), offsetof(ArrayFactory, vectorcall),
                         ArrayFactoryTraverse, ArrayFactoryClear, ArrayFactoryDealloc,
                         "factory(buffer, aval, device): an Array made in C.")) {
    return nullptr;
  }
  g_trace_name = PyUnicode_InternFromString("trace");
  g_fast_name = PyUnicode_InternFromString("fast");
  g_consume_name = PyUnicode_InternFromString("consume_with_handlers");
  if (g_trace_name == nullptr || g_fast_name == nullptr || g_consume_name == nullptr) {
    return nullptr;
  }
  return PyModule_Create(&module_def);
}
