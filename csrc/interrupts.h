// Ctrl-C for threads that cannot run Python's signal handlers (included by tap_queue.cc).
//
// Python runs signal handlers on the main thread only, between bytecodes.  A program that
// jaxlib runs synchronously (one with Python host callbacks, or host calls) keeps the main
// thread inside jaxlib until the program ends, while parts of it run on XLA's threads: a
// tap there that waits for room in a full queue would keep the main thread away from
// Ctrl-C for as long as the tap functions take.  So:
//
// * `Watched(execute)` wraps the execution of a program with effects: while the main thread
//   is inside it, `g_main_inside_since` holds the SIGINT count it went in with; and when
//   the execution fails, pending signal handlers run before it returns, so that Ctrl-C's
//   exception (KeyboardInterrupt) replaces the error of the computation it abandoned.
// * A handler chained in front of the process's SIGINT handler (Python's) counts SIGINTs
//   (`ObserveSigint`, installed when the queues are first used, and again by each wait for
//   room, since `signal.signal` replaces it).
// * A tap waiting for room off the main thread gives up (`MainThreadInterrupted`), which
//   abandons its computation as on the main thread, once a SIGINT came while the main
//   thread is inside a watched execution, if Python's handler for it is the default one,
//   which raises KeyboardInterrupt (a program with a handler of its own is left alone).
//
// `IgnoringArguments(fn)` is a callable that calls `fn()` whatever it is given, in C: a
// garbage collector callback of Python code could run a pending signal handler, and
// Python ignores (prints) what a GC callback raises, so a Ctrl-C would be lost there.
#ifndef MINIJAX_CSRC_INTERRUPTS_H_
#define MINIJAX_CSRC_INTERRUPTS_H_

#include <Python.h>
#include <pythread.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "callable_type.h"

namespace interrupts {

constexpr uint64_t kOutside = ~uint64_t{0};
inline std::atomic<uint64_t> g_sigints{0};
inline std::atomic<uint64_t> g_main_inside_since{kOutside};
inline std::atomic<unsigned long> g_main_thread{0};  // set_main_thread(ident)
inline struct sigaction g_next_sigint;  // what our handler passes SIGINT on to
inline std::mutex g_sigint_mu;

inline bool OnMainThread() {
  return PyThread_get_thread_ident() == g_main_thread.load(std::memory_order_relaxed);
}

inline void CountSigint(int sig, siginfo_t* info, void* context) {
  const struct sigaction& next = g_next_sigint;
  if (next.sa_flags & SA_SIGINFO) {
    g_sigints.fetch_add(1, std::memory_order_relaxed);
    next.sa_sigaction(sig, info, context);
  } else if (next.sa_handler == SIG_DFL) {  // the process ends
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  } else if (next.sa_handler != SIG_IGN) {
    g_sigints.fetch_add(1, std::memory_order_relaxed);
    next.sa_handler(sig);
  }
}

// Puts CountSigint in front of the process's SIGINT handler, unless it is there already.
inline void ObserveSigint() {
  std::lock_guard<std::mutex> lock(g_sigint_mu);
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == CountSigint) return;
  g_next_sigint = current;  // (CountSigint is not installed: nobody reads it now)
  struct sigaction ours = current;
  ours.sa_flags |= SA_SIGINFO;
  ours.sa_sigaction = CountSigint;
  sigaction(SIGINT, &ours, nullptr);
}

// Whether Python's handler for SIGINT is the default one (KeyboardInterrupt).  Takes the GIL.
inline bool SigintRaisesKeyboardInterrupt() {
  PyGILState_STATE gil = PyGILState_Ensure();
  bool raises = false;
  PyObject* signal_module = PyImport_ImportModule("signal");
  if (signal_module != nullptr) {
    PyObject* handler = PyObject_CallMethod(signal_module, "getsignal", "i", SIGINT);
    PyObject* standard = PyObject_GetAttrString(signal_module, "default_int_handler");
    raises = handler != nullptr && handler == standard;
    Py_XDECREF(handler);
    Py_XDECREF(standard);
    Py_DECREF(signal_module);
  }
  PyErr_Clear();
  PyGILState_Release(gil);
  return raises;
}

// For a wait off the main thread: whether it must give up for Ctrl-C (see the top).
inline bool MainThreadInterrupted(bool (*finalizing)()) {
  const uint64_t since = g_main_inside_since.load(std::memory_order_acquire);
  if (since == kOutside || g_sigints.load(std::memory_order_relaxed) <= since) return false;
  return !finalizing() && SigintRaisesKeyboardInterrupt();
}

struct Watched {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* fn;
};

inline PyObject* WatchedCall(PyObject* self_obj, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames) {
  auto* self = reinterpret_cast<Watched*>(self_obj);
  if (!OnMainThread()) return PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
  const uint64_t outer =
      g_main_inside_since.exchange(g_sigints.load(std::memory_order_relaxed));
  PyObject* result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
  g_main_inside_since.store(outer, std::memory_order_release);
  if (result == nullptr) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyErr_CheckSignals() != 0) {  // a handler raised: that is what the caller sees
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(traceback);
    } else {
      PyErr_Restore(type, value, traceback);
    }
  }
  return result;
}

// The same object type for both: `fn` called with the arguments, or without any.
inline PyObject* IgnoringArgumentsCall(PyObject* self_obj, PyObject* const*, size_t,
                                       PyObject*) {
  return PyObject_CallNoArgs(reinterpret_cast<Watched*>(self_obj)->fn);
}

inline int WatchedTraverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<Watched*>(self)->fn);
  return 0;
}

inline int WatchedClear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<Watched*>(self)->fn);
  return 0;
}

inline void WatchedDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  WatchedClear(self);
  Py_TYPE(self)->tp_free(self);
}

inline PyTypeObject WatchedType = {PyVarObject_HEAD_INIT(nullptr, 0)};

inline bool ReadyWatchedType(const char* name) {
  return ReadyCallableType(&WatchedType, name, sizeof(Watched), offsetof(Watched, vectorcall),
                           WatchedTraverse, WatchedClear, WatchedDealloc,
                           "A call of a function that Ctrl-C can end (see csrc/interrupts.h).");
}

inline PyObject* Wrap(PyObject* fn, vectorcallfunc call) {
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "expected a callable");
    return nullptr;
  }
  auto* self = PyObject_GC_New(Watched, &WatchedType);
  if (self == nullptr) return nullptr;
  self->vectorcall = call;
  Py_INCREF(fn);
  self->fn = fn;
  PyObject_GC_Track(self);
  return reinterpret_cast<PyObject*>(self);
}

// watched(fn) -> fn, called as `Watched` says; set_main_thread(ident); ignoring_arguments(fn).
inline PyObject* PyWatched(PyObject*, PyObject* fn) {
  ObserveSigint();
  return Wrap(fn, WatchedCall);
}

inline PyObject* PyIgnoringArguments(PyObject*, PyObject* fn) {
  return Wrap(fn, IgnoringArgumentsCall);
}

inline PyObject* PySetMainThread(PyObject*, PyObject* ident) {
  unsigned long value = PyLong_AsUnsignedLong(ident);
  if (value == static_cast<unsigned long>(-1) && PyErr_Occurred()) return nullptr;
  g_main_thread.store(value, std::memory_order_relaxed);
  ObserveSigint();
  Py_RETURN_NONE;
}

}  // namespace interrupts

#define MINIJAX_INTERRUPTS_METHODS                                                          \
  {"watched", interrupts::PyWatched, METH_O,                                                \
   "watched(execute) -> execute, which Ctrl-C can end while the main thread is inside it "  \
   "(see csrc/interrupts.h)."},                                                             \
  {"ignoring_arguments", interrupts::PyIgnoringArguments, METH_O,                           \
   "ignoring_arguments(fn) -> a callable that calls fn() whatever its arguments, in C."},   \
  {"set_main_thread", interrupts::PySetMainThread, METH_O,                                  \
   "set_main_thread(ident): the thread that runs Python's signal handlers."},

#endif  // MINIJAX_CSRC_INTERRUPTS_H_
