// minijax's value-returning host calls: an XLA FFI handler that runs a Python function in
// the middle of a computation and copies what it returns into the computation's result
// buffers, and the CPython module `minijax.runtime.host_calls._native` that registers
// those functions.
//
// A call site is registered once, at lowering time, as an entry: the Python function, the
// shape and dtype of every operand and of every result, and whether the function returns
// its only result directly (else a sequence of result leaves).  The custom call names its
// entry by the `callback` attribute of its backend_config.  When the computation reaches
// the call, the handler takes the GIL on the thread that executes it (the dispatching
// thread: the runtime compiles such executables to run synchronously, see
// runtime/executable.py), hands the function read-only numpy copies of the operands, as
// HostArrays when the entry was registered with their avals (host_array.h), (which it may
// keep: XLA reuses its buffers once the call returns, and
// jaxlib's Python callback hands out copies too), and copies the results into XLA's
// buffers.  A result that is already an array (or numpy scalar) of exactly the declared
// dtype and shape is copied here, in C; anything else goes through the entry's `convert`,
// a Python function that applies JAX's conversion rules and raises JAX's errors.
//
// When the function (or `convert`) raises, the handler hands the exception and the entry's
// id to the Python error hook (`set_error_hook`), which logs and files it and returns a message naming it; the
// handler fails the computation with that message, and the runtime, which waits for every
// computation that makes host calls, raises the filed exception from the call.
//
// Each thread counts the host calls it is inside (`depth()`), so that the runtime can run
// a computation dispatched from inside a host function without waiting on the token chains
// of the computation that called it (which cannot finish before the function returns).

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#if NPY_ABI_VERSION < 0x02000000  // numpy 1.x
#define PyDataType_ELSIZE(descr) ((descr)->elsize)
#endif

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "host_array.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

struct Spec {
  PyArray_Descr* descr = nullptr;  // owned reference
  int ndim = 0;
  npy_intp dims[NPY_MAXDIMS] = {};
  size_t nbytes = 0;
};

struct Entry {
  PyObject* func = nullptr;     // owned
  PyObject* convert = nullptr;  // owned: convert(value, index) -> ndarray matching results[index]
  bool single = false;          // func returns its only result leaf itself
  std::vector<Spec> args, results;
  std::vector<PyObject*> arg_avals;  // owned; empty: func gets numpy arrays, not HostArrays
  PyObject* device = nullptr;        // owned: the device of the HostArrays
};

// Entries are appended and read with the GIL held, and never removed: a compiled
// executable may refer to any id ever handed out.
std::vector<Entry*>* g_entries = new std::vector<Entry*>();
PyObject* g_error_hook = nullptr;  // error_hook(exception, id) -> str
thread_local int t_depth = 0;
minijax::HostArrayType g_host_array;  // set_host_array_type

constexpr int kStackOperands = 8;

// Fails the computation with the pending Python exception, filed by the error hook.
ffi::Error Failure(int64_t id) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (value != nullptr && traceback != nullptr) PyException_SetTraceback(value, traceback);
  std::string message = "minijax host call " + std::to_string(id) + " raised an exception";
  if (g_error_hook != nullptr && value != nullptr) {
    PyObject* text = PyObject_CallFunction(g_error_hook, "OL", value, static_cast<long long>(id));
    const char* utf8 = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
    if (utf8 != nullptr) message = utf8;
    Py_XDECREF(text);
    PyErr_Clear();
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return ffi::Error::Internal(std::move(message));
}

bool SameShape(PyArrayObject* a, const Spec& s) {
  if (PyArray_NDIM(a) != s.ndim) return false;
  const npy_intp* dims = PyArray_DIMS(a);
  for (int d = 0; d < s.ndim; ++d) {
    if (dims[d] != s.dims[d]) return false;
  }
  return true;
}

bool SameDtype(PyArray_Descr* d, const Spec& s) {
  return d == s.descr || (d->type_num == s.descr->type_num && d->type_num != NPY_VOID &&
                          PyArray_ISNBO(d->byteorder) && PyDataType_ELSIZE(d) == PyDataType_ELSIZE(s.descr));
}

// Copies result leaf `value` into `out`; false with a Python exception set on failure.
bool WriteResult(const Entry& e, size_t index, PyObject* value, void* out) {
  const Spec& s = e.results[index];
  value = minijax::HostValue(g_host_array, value);
  if (PyArray_CheckExact(value)) {
    auto* a = reinterpret_cast<PyArrayObject*>(value);
    if (SameDtype(PyArray_DESCR(a), s) && SameShape(a, s) && PyArray_IS_C_CONTIGUOUS(a)) {
      if (s.nbytes) std::memcpy(out, PyArray_DATA(a), s.nbytes);
      return true;
    }
  } else if (s.ndim == 0 && PyArray_IsScalar(value, Generic)) {
    PyArray_Descr* d = PyArray_DescrFromScalar(value);
    const bool same = d != nullptr && SameDtype(d, s);
    Py_XDECREF(d);
    if (same) {
      PyArray_ScalarAsCtype(value, out);
      return true;
    }
  }
  PyObject* converted = PyObject_CallFunction(e.convert, "On", value, static_cast<Py_ssize_t>(index));
  if (converted == nullptr) return false;
  bool ok = PyArray_CheckExact(converted);
  if (ok) {
    auto* a = reinterpret_cast<PyArrayObject*>(converted);
    ok = SameShape(a, s) && PyArray_IS_C_CONTIGUOUS(a) &&
         static_cast<size_t>(PyArray_NBYTES(a)) == s.nbytes;
    if (ok && s.nbytes) std::memcpy(out, PyArray_DATA(a), s.nbytes);
  }
  Py_DECREF(converted);
  if (!ok) {
    PyErr_Format(PyExc_SystemError, "minijax host call: convert returned a value that does "
                                    "not match result #%zd", static_cast<Py_ssize_t>(index));
  }
  return ok;
}

ffi::Error CallEntry(int64_t id, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  if (id < 0 || id >= static_cast<int64_t>(g_entries->size())) {
    return ffi::Error::InvalidArgument("minijax_host_call: unknown callback id " +
                                       std::to_string(id));
  }
  const Entry& e = *(*g_entries)[id];
  PyObject* stack[kStackOperands];
  std::vector<PyObject*> heap;
  PyObject** argv = stack;
  if (e.args.size() > kStackOperands) {
    heap.resize(e.args.size());
    argv = heap.data();
  }
  size_t n = 0;
  bool ok = true;
  for (size_t i = 0; i < args.size() && ok; ++i) {
    auto buf = args.get<ffi::AnyBuffer>(i);
    if (!buf.has_value()) {
      ok = false;
      PyErr_SetString(PyExc_SystemError, "minijax host call: cannot read an operand");
      break;
    }
    if (buf->element_type() == ffi::DataType::TOKEN) continue;
    if (n >= e.args.size() || buf->size_bytes() != e.args[n].nbytes) {
      ok = false;
      PyErr_SetString(PyExc_SystemError, "minijax host call: operands do not match the entry");
      break;
    }
    const Spec& s = e.args[n];
    Py_INCREF(s.descr);  // stolen
    PyObject* a = PyArray_NewFromDescr(&PyArray_Type, s.descr, s.ndim,
                                       const_cast<npy_intp*>(s.dims), nullptr, nullptr, 0,
                                       nullptr);
    if (a == nullptr) {
      ok = false;
      break;
    }
    auto* array = reinterpret_cast<PyArrayObject*>(a);
    if (s.nbytes) std::memcpy(PyArray_DATA(array), buf->untyped_data(), s.nbytes);
    PyArray_CLEARFLAGS(array, NPY_ARRAY_WRITEABLE);
    if (!e.arg_avals.empty()) {
      a = minijax::WrapHostArray(g_host_array, a, e.arg_avals[n], e.device);
      if (a == nullptr) {
        ok = false;
        break;
      }
    }
    argv[n++] = a;
  }
  if (ok && n != e.args.size()) {
    ok = false;
    PyErr_SetString(PyExc_SystemError, "minijax host call: too few operands for the entry");
  }
  PyObject* out = nullptr;
  if (ok) {
    ++t_depth;
    out = PyObject_Vectorcall(e.func, argv, n, nullptr);
    --t_depth;
  }
  for (size_t i = 0; i < n; ++i) Py_DECREF(argv[i]);
  if (out == nullptr) return Failure(id);

  PyObject* seq = nullptr;
  if (!e.single) {
    seq = PySequence_Fast(out, "a host call's flat function must return a sequence");
    if (seq != nullptr && static_cast<size_t>(PySequence_Fast_GET_SIZE(seq)) != e.results.size()) {
      PyErr_SetString(PyExc_SystemError, "minijax host call: wrong number of result leaves");
      Py_CLEAR(seq);
    }
    if (seq == nullptr) {
      Py_DECREF(out);
      return Failure(id);
    }
  }
  size_t r = 0;
  for (size_t i = 0; i < rets.size() && ok; ++i) {
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (!ret.has_value()) {
      ok = false;
      PyErr_SetString(PyExc_SystemError, "minijax host call: cannot read a result buffer");
      break;
    }
    if ((*ret)->element_type() == ffi::DataType::TOKEN) continue;
    if (r >= e.results.size() || (*ret)->size_bytes() != e.results[r].nbytes) {
      ok = false;
      PyErr_SetString(PyExc_SystemError, "minijax host call: results do not match the entry");
      break;
    }
    PyObject* leaf = e.single ? out : PySequence_Fast_GET_ITEM(seq, r);
    ok = WriteResult(e, r, leaf, (*ret)->untyped_data());
    ++r;
  }
  Py_XDECREF(seq);
  Py_DECREF(out);
  if (!ok) return Failure(id);
  return ffi::Error::Success();
}

ffi::Error HostCallImpl(int64_t callback, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  if (!Py_IsInitialized()) {
    return ffi::Error::Internal("minijax_host_call: the Python interpreter is not running");
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  // An XLA worker thread (a computation over several devices runs its host calls there)
  // keeps its Python thread state from one call to the next: releasing the last hold
  // would clear it, and with it the thread-local values a host function made (an MLIR
  // context, when it dispatches minijax operations), freed then without a thread state.
  thread_local bool t_state_kept = false;
  if (!t_state_kept) {
    PyGILState_Ensure();  // never released
    t_state_kept = true;
  }
  ffi::Error error = CallEntry(callback, args, rets);
  PyGILState_Release(gil);
  return error;
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(MinijaxHostCallHandler, HostCallImpl,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("callback")
                                  .RemainingArgs()
                                  .RemainingRets());

// ---------------------------------------------------------------------------
// Module functions.

namespace {

// Parses a sequence of (dtype, shape) pairs into specs.
bool ParseSpecs(PyObject* obj, std::vector<Spec>* specs) {
  PyObject* seq = PySequence_Fast(obj, "specs must be a sequence of (dtype, shape) pairs");
  if (seq == nullptr) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  bool ok = true;
  for (Py_ssize_t i = 0; i < n && ok; ++i) {
    PyObject *dtype, *shape;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OO!", &dtype, &PyTuple_Type,
                          &shape)) {
      ok = false;
      break;
    }
    Spec s;
    if (!PyArray_DescrConverter(dtype, &s.descr)) {  // new reference
      ok = false;
      break;
    }
    specs->push_back(s);  // owns s.descr from here on
    Spec& kept = specs->back();
    if (PyTuple_GET_SIZE(shape) > NPY_MAXDIMS) {
      PyErr_SetString(PyExc_ValueError, "too many dimensions");
      ok = false;
      break;
    }
    kept.ndim = static_cast<int>(PyTuple_GET_SIZE(shape));
    size_t count = 1;
    for (int d = 0; d < kept.ndim; ++d) {
      kept.dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
      if (kept.dims[d] < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "negative dimension");
        ok = false;
        break;
      }
      count *= static_cast<size_t>(kept.dims[d]);
    }
    kept.nbytes = count * static_cast<size_t>(PyDataType_ELSIZE(kept.descr));
  }
  Py_DECREF(seq);
  return ok;
}

void FreeEntry(Entry* e) {
  for (PyObject* a : e->arg_avals) Py_DECREF(a);
  Py_XDECREF(e->device);
  Py_XDECREF(e->func);
  Py_XDECREF(e->convert);
  for (Spec& s : e->args) Py_XDECREF(s.descr);
  for (Spec& s : e->results) Py_XDECREF(s.descr);
  delete e;
}

// register(func, single, arg_specs, result_specs, convert[, (arg_avals, device)]) -> id
PyObject* PyRegister(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if ((nargs != 5 && nargs != 6) || !PyCallable_Check(args[0]) || !PyCallable_Check(args[4])) {
    PyErr_SetString(PyExc_TypeError, "register(func, single: bool, arg_specs, result_specs, "
                                     "convert[, (arg_avals, device)])");
    return nullptr;
  }
  auto* e = new Entry();
  Py_INCREF(args[0]);
  e->func = args[0];
  Py_INCREF(args[4]);
  e->convert = args[4];
  const int single = PyObject_IsTrue(args[1]);
  if (single < 0 || !ParseSpecs(args[2], &e->args) || !ParseSpecs(args[3], &e->results)) {
    FreeEntry(e);
    return nullptr;
  }
  e->single = single == 1;
  if (nargs == 6 && args[5] != Py_None) {  // operands as HostArrays of these avals
    PyObject *avals, *device;
    if (!PyArg_ParseTuple(args[5], "O!O", &PyTuple_Type, &avals, &device) ||
        static_cast<size_t>(PyTuple_GET_SIZE(avals)) != e->args.size()) {
      FreeEntry(e);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "one aval per operand spec");
      return nullptr;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(avals); ++i) {
      Py_INCREF(PyTuple_GET_ITEM(avals, i));
      e->arg_avals.push_back(PyTuple_GET_ITEM(avals, i));
    }
    Py_INCREF(device);
    e->device = device;
  }
  if (e->single && e->results.size() != 1) {
    FreeEntry(e);
    PyErr_SetString(PyExc_ValueError, "single=True needs exactly one result spec");
    return nullptr;
  }
  g_entries->push_back(e);
  return PyLong_FromSize_t(g_entries->size() - 1);
}

PyObject* PySetErrorHook(PyObject*, PyObject* hook) {
  if (!PyCallable_Check(hook)) {
    PyErr_SetString(PyExc_TypeError, "set_error_hook(hook): hook must be callable");
    return nullptr;
  }
  Py_INCREF(hook);
  Py_XSETREF(g_error_hook, hook);
  Py_RETURN_NONE;
}

PyObject* PyHandler(PyObject*, PyObject*) {
  return PyCapsule_New(reinterpret_cast<void*>(&MinijaxHostCallHandler), nullptr, nullptr);
}

PyObject* PyDepth(PyObject*, PyObject*) { return PyLong_FromLong(t_depth); }

PyObject* PyEnter(PyObject*, PyObject*) {
  ++t_depth;
  Py_RETURN_NONE;
}

PyObject* PyLeave(PyObject*, PyObject*) {
  if (t_depth > 0) --t_depth;
  Py_RETURN_NONE;
}

PyObject* PyCount(PyObject*, PyObject*) { return PyLong_FromSize_t(g_entries->size()); }

PyObject* PySetHostArrayType(PyObject*, PyObject* cls) {
  return minijax::SetHostArrayType(&g_host_array, cls);
}

PyMethodDef methods[] = {
    {"handler", PyHandler, METH_NOARGS,
     "handler() -> PyCapsule holding the XLA FFI handler (NULL name, no destructor)."},
    {"register", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PyRegister)),
     METH_FASTCALL,
     "register(func, single, arg_specs, result_specs, convert) -> id: a call site; specs are "
     "(dtype, shape) pairs; convert(value, index) turns a result leaf that is not exactly "
     "of its spec into a C-contiguous array that is, or raises."},
    {"set_error_hook", PySetErrorHook, METH_O,
     "set_error_hook(hook): hook(exception, id) files an exception raised in the host call "
     "`id` and returns the message the computation fails with."},
    {"depth", PyDepth, METH_NOARGS, "depth() -> how many host calls this thread is inside."},
    {"enter", PyEnter, METH_NOARGS, "enter(): this thread enters a host call (for the "
                                    "Python-callback mechanism)."},
    {"leave", PyLeave, METH_NOARGS, "leave(): this thread leaves a host call."},
    {"count", PyCount, METH_NOARGS, "count() -> the number of registered call sites."},
    {"set_host_array_type", PySetHostArrayType, METH_O,
     "set_host_array_type(HostArray): the class of the operands of entries registered with "
     "avals (see host_array.h)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_native",
                          "minijax's XLA FFI handler for value-returning host calls.", -1,
                          methods};

}  // namespace

PyMODINIT_FUNC PyInit__native() {
  if (_import_array() < 0) return nullptr;
  return PyModule_Create(&module_def);
}
