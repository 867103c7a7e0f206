// Building `minijax.runtime.array.HostArray` objects in C, for the handlers that hand a
// callback's operands to its host function (host_call.cc, tap_queue.cc).
//
// A HostArray is an `Array` (a Python class with __slots__) whose value is a numpy array
// already on the host; it is put on its device only when an operation needs a buffer.
// Making one through Python would cost a call per operand on the fastest path of every
// callback, so the handlers allocate it here and fill four of its slots, `aval`,
// `_device`, `_npy` and `_sharding`, at the offsets that CPython's member descriptors
// record; the buffer slot stays empty (HostArray's `_buffer` property fills it on first use).
// The module's `set_host_array_type(HostArray)` finds those offsets once.

#ifndef MINIJAX_CSRC_HOST_ARRAY_H_
#define MINIJAX_CSRC_HOST_ARRAY_H_

#include <Python.h>
#include <structmember.h>

namespace minijax {

struct HostArrayType {
  PyTypeObject* type = nullptr;  // owned
  Py_ssize_t aval = -1, device = -1, npy = -1, sharding = -1;
};

// The offset of slot `name` of `cls` (a member descriptor found along its MRO), or -1
// with a Python exception set.
inline Py_ssize_t SlotOffset(PyObject* cls, const char* name) {
  PyObject* descr = PyObject_GetAttrString(cls, name);
  if (descr == nullptr) return -1;
  Py_ssize_t offset = -1;
  if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
    PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr)->d_member;
    if (member->type == T_OBJECT_EX) offset = member->offset;
  }
  Py_DECREF(descr);
  if (offset < 0) PyErr_Format(PyExc_TypeError, "%s is not an object slot", name);
  return offset;
}

// set_host_array_type(cls): remembers `cls` and the offsets of its slots.
inline PyObject* SetHostArrayType(HostArrayType* t, PyObject* cls) {
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "set_host_array_type(cls): cls must be a class");
    return nullptr;
  }
  HostArrayType found;
  found.aval = SlotOffset(cls, "aval");
  found.device = found.aval < 0 ? -1 : SlotOffset(cls, "_device");
  found.npy = found.device < 0 ? -1 : SlotOffset(cls, "_npy");
  found.sharding = found.npy < 0 ? -1 : SlotOffset(cls, "_sharding");
  if (found.sharding < 0) return nullptr;
  Py_INCREF(cls);
  found.type = reinterpret_cast<PyTypeObject*>(cls);
  Py_XDECREF(reinterpret_cast<PyObject*>(t->type));
  *t = found;
  Py_RETURN_NONE;
}

inline void SetSlot(PyObject* obj, Py_ssize_t offset, PyObject* value) {
  Py_INCREF(value);
  *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + offset) = value;
}

// A HostArray over `array` (a reference this steals) with `aval` on `device`; `array`
// itself when no type was set; nullptr with a Python exception on failure.
inline PyObject* WrapHostArray(const HostArrayType& t, PyObject* array, PyObject* aval,
                               PyObject* device) {
  if (t.type == nullptr || array == nullptr) return array;
  PyObject* obj = t.type->tp_alloc(t.type, 0);  // slots start out NULL
  if (obj == nullptr) {
    Py_DECREF(array);
    return nullptr;
  }
  SetSlot(obj, t.aval, aval);
  SetSlot(obj, t.device, device);
  SetSlot(obj, t.sharding, Py_None);
  *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + t.npy) = array;  // stolen
  return obj;
}

// The numpy value of `value` when it is an unmaterialized-or-not HostArray of type `t`
// (borrowed), else `value` itself: a host function that returns its operand hands back
// the array it was given, which the result copy then reads directly.
inline PyObject* HostValue(const HostArrayType& t, PyObject* value) {
  if (t.type == nullptr || Py_TYPE(value) != t.type) return value;
  PyObject* npy = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(value) + t.npy);
  return npy != nullptr ? npy : value;
}

}  // namespace minijax

#endif  // MINIJAX_CSRC_HOST_ARRAY_H_
