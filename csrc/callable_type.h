// The CPython type of a callable native object: garbage-collected, called through the
// vectorcall function it stores at `vectorcall_offset` (its tp_call goes there too).
// Shared by the extensions' dispatch objects (tap_queue.cc, fast_path.cc).
#ifndef MINIJAX_CSRC_CALLABLE_TYPE_H_
#define MINIJAX_CSRC_CALLABLE_TYPE_H_

#include <Python.h>

// Fills in `type` and readies it; false, with the error set, if that fails.
inline bool ReadyCallableType(PyTypeObject* type, const char* name, Py_ssize_t size,
                              Py_ssize_t vectorcall_offset, traverseproc traverse,
                              inquiry clear, destructor dealloc, const char* doc) {
  type->tp_name = name;
  type->tp_basicsize = size;
  type->tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
  type->tp_vectorcall_offset = vectorcall_offset;
  type->tp_call = PyVectorcall_Call;
  type->tp_traverse = traverse;
  type->tp_clear = clear;
  type->tp_dealloc = dealloc;
  type->tp_doc = doc;
  return PyType_Ready(type) == 0;
}

#endif  // MINIJAX_CSRC_CALLABLE_TYPE_H_
