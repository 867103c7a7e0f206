// minijax's native outfeed: an XLA FFI handler that copies tapped buffers into a
// per-device queue, and the CPython module `minijax.runtime.taps._native` that the
// receiver threads drain it through.
//
// Each queue is bounded in bytes.  A device that finds its queue full waits (never
// drops a tap) until a receiver thread pops enough; the executing thread never has
// to drain its own queue.  A message larger than the whole capacity is admitted
// once the queue is empty, so it cannot deadlock.  A closed queue (its receivers are
// stopped, or stopping) admits every message at once: nobody may be drained for a
// while, so waiting could be forever; the taps are delivered once receivers restart.
//
// A thread that waits for room wakes every kSignalPoll.  The main thread (that called a
// cheap program, which jaxlib runs inline, or the Python-callback mechanism's) runs
// Python's pending signal handlers (`PyErr_CheckSignals`).  When one raises (Ctrl-C:
// KeyboardInterrupt), the tap is dropped, the FFI handler fails, which abandons the
// computation, and the exception is kept for `take_interrupt()`, which the dispatching
// code calls when the run fails, to raise it from the user's call.  Another thread gives
// up the same way on Ctrl-C while the main thread is inside a synchronous program
// (interrupts.h), which then raises the KeyboardInterrupt.  Each message is one buffer (a header, then the tapped arrays): a
// recycled slot for small ones (see kSmallSlot), a pooled or malloc'd buffer otherwise.
// The queue holds the messages in a vector that the receiver swaps for its emptied last
// batch (see MessageFifo), so a push allocates nothing in steady state.  Python sees a
// message as a writable buffer object (`Payload`) that numpy views without copying; a
// small tap delivered by the receiver itself is first copied into a Payload of its own,
// which frees its slot at once.  A receiver that keeps up with its device is never put to
// sleep, so the device side of a tap makes no system call.

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <algorithm>
#include <vector>

#include "callable_type.h"
#include "host_array.h"
#include "interrupts.h"

#include <sys/mman.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kMessageOverhead = 64;  // charged per message, so even empty taps are bounded
// Queues are indexed by device ordinal, which for jaxlib's CPU client is the device id:
// 0..n-1 in one process, p * 2048 + 0..n-1 in process p of several.  A slot per id modulo
// kMaxDevices keeps one process's devices apart and the lookup an array index.
constexpr int kMaxDevices = 2048;

size_t AlignUp(size_t n, size_t alignment = kAlignment) {
  return (n + alignment - 1) & ~(alignment - 1);
}
// A tap that fits a small slot (see kSmallSlot) aligns its arrays to this only, so that a
// scalar and its header share one cache line: the line that the receiver reads and the
// next producer of that slot writes.  It is as much as any numpy dtype needs.
constexpr size_t kSmallAlignment = 16;

// One tap is one allocation: a header holding the allocation's capacity, the number of
// arrays and each array's offset from the start, then the arrays, each at a multiple of
// kAlignment from the start.
struct Layout {
  size_t header = 0;
  size_t total = 0;
  size_t alignment = kAlignment;
};

Layout HeaderFor(size_t n_arrays, size_t alignment = kAlignment) {
  Layout l;
  l.header = AlignUp(sizeof(uint64_t) * (2 + n_arrays), alignment);
  l.total = l.header;
  l.alignment = alignment;
  return l;
}

uint64_t* HeaderOf(char* data) { return reinterpret_cast<uint64_t*>(data); }

// Large payloads are recycled, per device: touching fresh pages costs more than copying
// into them (a 1 MiB tap copied into new memory spends most of its time in page faults).
// Each device's pool (a member of its queue) keeps up to the queue's capacity in free
// buffers: the bytes in flight never exceed it, so a device whose taps keep the queue busy
// allocates nothing once warm.  It hands out the buffer freed last among those that fit,
// the one most likely still in cache.  Pooled buffers are mapped with MAP_POPULATE, which
// faults their pages in once, when they are made, in one system call.  Every payload is
// preceded by kAlignment bytes that name its pool (null for a small, malloc'd one), so
// that whoever frees it (a receiver, when Python drops the last view) returns it there.
constexpr size_t kPoolMin = 64 * 1024;
constexpr size_t kPoolGranule = 64 * 1024;
constexpr size_t kPoolMaxBuffer = 16u << 20;
constexpr size_t kPoolHurryBytes = 4u << 20;  // queued bytes that end a receiver's lingering
constexpr int64_t kPoolWarmNs = 1000000;      // a buffer freed this recently is still cached

// Small taps (the usual ones: a scalar, a few numbers) go in fixed-size slots that are
// recycled and never freed, so that no tap costs a malloc on the XLA thread and a free on
// the receiver's (glibc's cross-thread frees are the dear ones).  A producer takes a slot
// and fills it under the queue's lock (see Enqueue).  The receiver copies a tap of one
// array out of its slot into a small Python object (PyDeliver) and returns the slot at
// once; a slot handed to Python in a Payload goes back when that Payload dies.  Either way
// (always with the GIL held) it goes onto `small_returned`, which needs no lock, and the
// receiver moves those back to `small_free`, under the queue's lock, once per batch.
constexpr size_t kSmallSlot = 256;        // payload bytes of a slot, header included
constexpr size_t kSmallFreeMax = 1u << 14;  // slots kept per device (5 MiB)

struct Pool {
  std::mutex mu;
  std::multimap<size_t, char*> free;  // by capacity; equal capacities in the order freed
  size_t bytes = 0;
  std::mutex* queue_mu = nullptr;     // the owning queue's, which guards small_free
  std::vector<char*> small_free;
  std::vector<char*> small_returned;  // only touched with the GIL held
};

enum class Kind : int32_t { kMalloc, kPooled, kSmall };

struct PayloadPrefix {
  Pool* pool;         // null: malloc'd, not pooled
  size_t capacity;    // of a pooled buffer, prefix excluded
  int64_t freed_ns;   // when it last went back to the pool (0: never used)
  Kind kind;
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}
static_assert(sizeof(PayloadPrefix) <= kAlignment, "the prefix must fit before the payload");

std::atomic<size_t> g_capacity{256u * 1024u * 1024u};

char* AllocPayload(Pool* pool, size_t size) {
  char* p = nullptr;
  if (size < kPoolMin || size > kPoolMaxBuffer) {
    char* base = static_cast<char*>(std::malloc(size + kAlignment));
    if (base == nullptr) return nullptr;
    *reinterpret_cast<PayloadPrefix*>(base) = PayloadPrefix{nullptr, size, 0, Kind::kMalloc};
    p = base + kAlignment;
  } else {
    size_t capacity = (size + kPoolGranule - 1) / kPoolGranule * kPoolGranule;
    {
      std::lock_guard<std::mutex> lock(pool->mu);
      auto it = pool->free.lower_bound(capacity);
      if (it != pool->free.end() && it->first <= capacity + capacity / 4) {
        it = std::prev(pool->free.upper_bound(it->first));  // the one freed last
        p = it->second;
        pool->bytes -= it->first;
        pool->free.erase(it);
      }
    }
    if (p == nullptr) {
      void* base = mmap(nullptr, capacity + kAlignment, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
      if (base == MAP_FAILED) return nullptr;
      *static_cast<PayloadPrefix*>(base) = PayloadPrefix{pool, capacity, 0, Kind::kPooled};
      p = static_cast<char*>(base) + kAlignment;
    }
  }
  HeaderOf(p)[0] = size;
  return p;
}

// Copies a tapped array into payload `p`.  A pooled buffer that has not been used for a
// while has left the caches: writing it through them would first read every line of it
// back from memory, so it is filled with streaming stores instead, which skip the caches.
void CopyIntoPayload(char* p, char* dst, const void* src, size_t n) {
  const auto& prefix = *reinterpret_cast<const PayloadPrefix*>(p - kAlignment);
#if defined(__SSE2__)
  const bool cold = prefix.pool != nullptr && n >= kPoolMin &&
                    (prefix.freed_ns == 0 || NowNs() - prefix.freed_ns > kPoolWarmNs);
  if (cold && reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
    const char* s = static_cast<const char*>(src);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
      __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
    }
    _mm_sfence();
    std::memcpy(dst + i, s + i, n - i);
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

// A small slot for `pool`'s queue; the caller holds the queue's lock.  Null when out of
// memory.
char* TakeSmallSlot(Pool* pool) {
  if (!pool->small_free.empty()) {
    char* p = pool->small_free.back();
    pool->small_free.pop_back();
    return p;
  }
  char* base = static_cast<char*>(std::aligned_alloc(kAlignment, kSmallSlot + kAlignment));
  if (base == nullptr) return nullptr;
  *reinterpret_cast<PayloadPrefix*>(base) = PayloadPrefix{pool, kSmallSlot, 0, Kind::kSmall};
  return base + kAlignment;
}

// Moves `slots` to `pool`'s free slots; the caller holds the queue's lock.  Returns the
// slots beyond kSmallFreeMax in `slots`, for the caller to free without the lock.
void RecycleSmallSlots(Pool* pool, std::vector<char*>* slots) {
  while (!slots->empty() && pool->small_free.size() < kSmallFreeMax) {
    pool->small_free.push_back(slots->back());
    slots->pop_back();
  }
}

// Frees payload `p`; `gil`: the caller holds the GIL (a small slot then goes back without
// a lock, see kSmallSlot).
void FreePayload(char* p, bool gil) {
  char* base = p - kAlignment;
  const PayloadPrefix prefix = *reinterpret_cast<PayloadPrefix*>(base);
  if (prefix.kind == Kind::kMalloc) {
    std::free(base);
    return;
  }
  if (prefix.kind == Kind::kSmall) {
    if (gil) {
      prefix.pool->small_returned.push_back(p);
      return;
    }
    std::lock_guard<std::mutex> lock(*prefix.pool->queue_mu);
    prefix.pool->small_free.push_back(p);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(prefix.pool->mu);
    if (prefix.pool->bytes + prefix.capacity <= g_capacity.load(std::memory_order_relaxed)) {
      reinterpret_cast<PayloadPrefix*>(base)->freed_ns = NowNs();
      prefix.pool->free.emplace(prefix.capacity, p);
      prefix.pool->bytes += prefix.capacity;
      return;
    }
  }
  munmap(base, prefix.capacity + kAlignment);
}

bool IsSmallSlot(const char* p) {
  return reinterpret_cast<const PayloadPrefix*>(p - kAlignment)->kind == Kind::kSmall;
}

struct Message {
  int64_t consumer;
  uint64_t seq;
  char* data;      // owned until handed to a Payload
  size_t size;     // bytes in `data`
  size_t charged;  // bytes counted against the queue
};

// A queue's messages, oldest first: a vector read from `head` on.  The receiver takes them
// all by swapping in the (emptied) vector of its previous batch, so that in steady state
// no push allocates (a deque would allocate a block every few pushes on the producer's
// thread, for the receiver's to free).
class MessageFifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  void push_back(Message&& m) { items_.push_back(std::move(m)); }

  // Moves the first `n` messages (all of them if fewer) into `out`, which is empty and
  // whose capacity the queue may keep; returns their charged bytes.
  size_t Take(size_t n, std::vector<Message>* out) {
    size_t charged = 0;
    if (head_ == 0 && n >= items_.size()) {
      out->swap(items_);
      for (const Message& m : *out) charged += m.charged;
      return charged;
    }
    const size_t end = head_ + std::min(n, size());
    out->assign(items_.begin() + head_, items_.begin() + end);
    for (const Message& m : *out) charged += m.charged;
    head_ = end;
    if (head_ >= size()) {  // as many taken as left: drop the taken ones (amortized O(1))
      items_.erase(items_.begin(), items_.begin() + head_);
      head_ = 0;
    }
    return charged;
  }

 private:
  std::vector<Message> items_;
  size_t head_ = 0;
};

struct Queue {
  std::mutex mu;
  std::condition_variable has_data;
  std::condition_variable has_room;
  MessageFifo items;
  std::atomic<size_t> n_items{0};  // items.size(), readable without the lock
  size_t used = 0;
  size_t high_water = 0;
  uint64_t enqueued = 0;           // also the next sequence number
  uint64_t bytes_enqueued = 0;
  int64_t blocked_ns = 0;
  int producers_waiting = 0;       // mirrored, for readers without the lock, in g_waiting
  int device = 0;
  bool consumer_waiting = false;
  bool closed = false;
  // Whether a receiver drains the queue (open, not closed since): read by StreamedDispatch
  // without the lock.
  std::atomic<bool> receiving{false};
  // Set by a barrier's flush, by close and by a producer that finds the queue full: the
  // receiver takes what is queued without lingering, until the queue is empty.
  std::atomic<bool> hurry{false};
  // Taps the receiver has finished with: a batch counts once the receiver asks for the next.
  std::atomic<uint64_t> delivered{0};
  uint64_t in_flight = 0;          // the receiver's current batch (only it touches this)
  std::condition_variable drained;
  Pool pool;                       // recycled payload buffers (see AllocPayload)
};

std::atomic<int64_t> g_spin_ns{50000};
std::atomic<int64_t> g_linger_ns{200000};
constexpr std::chrono::milliseconds kMaxLinger{10};
constexpr std::chrono::milliseconds kDrainSpin{2};

// Spinning adapts to load.  A yield that comes back after kContendedYield ran another
// thread on this CPU: the cores are all busy, and a spinning receiver would take its time
// slices from the thread that dispatches.  Then, for kContendedFor, nobody spins: waits
// sleep on a condition variable, and a receiver lingers sleeping, for longer (a burst's
// calls come further apart when they share a core).
constexpr std::chrono::microseconds kContendedYield{20};
constexpr int64_t kContendedForNs = 50000000;
constexpr int kLingerUnderLoad = 4;      // times the quiet window, doubling while taps come
constexpr size_t kBatchUnderLoad = 16;   // times the batch size
constexpr std::chrono::milliseconds kMaxLingerUnderLoad{100};
std::atomic<int64_t> g_contended_until_ns{0};

bool Contended() {
  const int64_t until = g_contended_until_ns.load(std::memory_order_relaxed);
  return until != 0 && NowNs() < until;
}

// Polls `done` (yielding the CPU) until it holds or `deadline` passes, or the CPU turns out
// contended (see above).  Waiting this way instead of sleeping matters on virtual machines,
// where waking a sleeping thread can take 50-100 µs.  `adapt`: false for a thread that
// only waits for the receivers (a barrier), which takes nothing from dispatch by spinning.
template <typename Done>
bool SpinUntil(std::chrono::steady_clock::time_point deadline, Done done, bool adapt = true) {
  if (adapt && Contended()) return done();
  while (!done()) {
    const auto before = std::chrono::steady_clock::now();
    if (before >= deadline) return false;
    std::this_thread::yield();
    if (std::chrono::steady_clock::now() - before > kContendedYield) {
      g_contended_until_ns.store(NowNs() + kContendedForNs, std::memory_order_relaxed);
      if (adapt) return done();
    }
  }
  return true;
}
std::atomic<Queue*> g_queues[kMaxDevices];

// Per device, how many taps wait for room in its queue now.  Python reads it, once per
// tapped dispatch, through the `waiting` memoryview, which costs less than a call.
std::atomic<int32_t> g_waiting[kMaxDevices];
static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t) &&
                  std::atomic<int32_t>::is_always_lock_free,
              "g_waiting is exposed to Python as an array of int32");

// Per device, the executions with effects dispatched since its last progress mark: counted
// by Python's `before_execution` (through the writable `dispatched` memoryview) and by
// StreamedDispatch, which on every kPace-th checks that the previous mark was passed and
// otherwise hands it to Python, where the dispatching thread waits for that mark (see
// `receiver.before_execution`).
constexpr int32_t kPace = 8;
std::atomic<int32_t> g_dispatched[kMaxDevices];

Queue* GetQueue(int device) {
  if (device < 0) return nullptr;
  device %= kMaxDevices;
  Queue* q = g_queues[device].load(std::memory_order_acquire);
  if (q != nullptr) return q;
  Queue* fresh = new Queue();
  fresh->device = device;
  fresh->pool.queue_mu = &fresh->mu;
  if (g_queues[device].compare_exchange_strong(q, fresh)) return fresh;
  delete fresh;
  return q;
}

constexpr std::chrono::milliseconds kSignalPoll{50};

// The exception a signal handler raised while this thread waited for room (owned; taken
// by `take_interrupt`).  Only touched with the GIL held.
thread_local PyObject* t_interrupt = nullptr;

// Whether this thread is a receiver (it called `deliver`), so that it runs tap functions.
thread_local bool t_receiver = false;

bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Runs Python's pending signal handlers on this thread (a Python thread that released the
// GIL); true, with the exception kept in t_interrupt, when one raised.
bool SignalHandlerRaised() {
  if (InterpreterFinalizing()) return false;
  PyGILState_STATE gil = PyGILState_Ensure();
  bool raised = false;
  if (PyErr_CheckSignals() != 0) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value != nullptr && traceback != nullptr) PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    Py_XSETREF(t_interrupt, value);
    raised = value != nullptr;
  }
  PyGILState_Release(gil);
  return raised;
}

enum class Admitted { kQueued, kInterrupted, kOutOfMemory };

// Admits `msg` once there is room (see the top of the file); a message not queued (its wait
// was interrupted) is freed here.  `msg.data` is either allocated and filled by the caller,
// or null: then `fill(slot)`, called under the lock once there is room, fills a small slot
// (see kSmallSlot).  Only wakes the receiver when it sleeps: while it is busy or spinning, a
// tap costs no system call.
//
// The lock stays, rather than a single-producer ring: XLA may run one device's tap handlers
// on several of its threads (and the Python-callback mechanism pushes from Python threads),
// so a device's queue has several producers.  Uncontended, it costs two atomic operations.
template <typename Fill>
Admitted Enqueue(Queue* q, Message&& msg, Fill fill) {
  std::unique_lock<std::mutex> lock(q->mu);
  const size_t charged = msg.charged;
  auto has_room = [&] {
    return q->closed || q->used == 0 ||
           q->used + charged <= g_capacity.load(std::memory_order_relaxed);
  };
  if (!has_room()) {
    auto start = std::chrono::steady_clock::now();
    ++q->producers_waiting;
    g_waiting[q->device].fetch_add(1, std::memory_order_release);
    q->hurry.store(true, std::memory_order_release);  // a lingering receiver must drain now
    q->has_data.notify_one();
    bool interrupted = false;
    // The main thread runs Python's signal handlers itself; any other thread (an XLA
    // thread, or a Python thread that runs a program inline) gives up on Ctrl-C while the
    // main thread waits inside a synchronous program (see interrupts.h).
    const bool main = interrupts::OnMainThread() && PyGILState_GetThisThreadState() != nullptr;
    interrupts::ObserveSigint();
    while (!q->has_room.wait_for(lock, kSignalPoll, has_room)) {
      lock.unlock();
      interrupted = main ? SignalHandlerRaised()
                         : interrupts::MainThreadInterrupted(InterpreterFinalizing);
      lock.lock();
      if (interrupted) break;
    }
    --q->producers_waiting;
    g_waiting[q->device].fetch_sub(1, std::memory_order_release);
    q->blocked_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start).count();
    if (interrupted) {
      lock.unlock();
      if (msg.data != nullptr) FreePayload(msg.data, /*gil=*/false);
      return Admitted::kInterrupted;
    }
  }
  if (msg.data == nullptr) {
    msg.data = TakeSmallSlot(&q->pool);
    if (msg.data == nullptr) return Admitted::kOutOfMemory;
    fill(msg.data);
  }
  msg.seq = q->enqueued++;
  q->bytes_enqueued += charged;
  q->used += charged;
  if (q->used > q->high_water) q->high_water = q->used;
  q->items.push_back(std::move(msg));
  q->n_items.store(q->items.size(), std::memory_order_release);
  // Payload buffers come back to the pool only once delivered: a receiver lingering over
  // large taps would cycle the pool through more memory than the caches hold.
  bool wake = q->consumer_waiting;
  if (q->used >= kPoolHurryBytes && !q->hurry.exchange(true, std::memory_order_acq_rel)) {
    wake = true;  // a receiver lingering asleep must drain now
  }
  lock.unlock();
  if (wake) q->has_data.notify_one();
  return Admitted::kQueued;
}

// The tapped arrays of one call (its operands less the tokens), read from the FFI's
// arguments once.
struct Tapped {
  static constexpr size_t kInline = 8;  // arrays kept without an allocation
  struct Array {
    const void* data;
    size_t bytes;
  };
  Array inline_arrays[kInline];
  std::vector<Array> more;  // used instead when a tap has more than kInline arrays
  size_t n = 0;
  Layout layout;

  const Array& operator[](size_t i) const { return more.empty() ? inline_arrays[i] : more[i]; }
};

// Reads the arrays of `args` into `t`; an error for an argument that is not a buffer.
ffi::Error ReadTapped(const ffi::RemainingArgs& args, Tapped* t) {
  const size_t n = args.size();
  if (n > Tapped::kInline) t->more.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto buf = args.get<ffi::AnyBuffer>(i);
    if (!buf.has_value()) return buf.error();
    if (buf->element_type() == ffi::DataType::TOKEN) continue;
    const Tapped::Array a{buf->untyped_data(), buf->size_bytes()};
    if (n > Tapped::kInline) {
      t->more.push_back(a);
    } else {
      t->inline_arrays[t->n] = a;
    }
    ++t->n;
  }
  for (size_t alignment : {kSmallAlignment, kAlignment}) {  // small if it fits a slot so
    t->layout = HeaderFor(t->n, alignment);
    for (size_t i = 0; i < t->n; ++i) t->layout.total += AlignUp((*t)[i].bytes, alignment);
    if (t->layout.total <= kSmallSlot) break;
  }
  return ffi::Error::Success();
}

// Writes the tapped arrays `t` into payload `data` (see Layout).
void FillPayload(char* data, const Tapped& t) {
  uint64_t* header = HeaderOf(data);
  header[0] = t.layout.total;
  header[1] = t.n;
  size_t offset = t.layout.header;
  for (size_t i = 0; i < t.n; ++i) {
    header[2 + i] = offset;
    if (t.layout.total <= kSmallSlot) {
      std::memcpy(data + offset, t[i].data, t[i].bytes);
    } else {
      CopyIntoPayload(data, data + offset, t[i].data, t[i].bytes);
    }
    offset += AlignUp(t[i].bytes, t.layout.alignment);
  }
}

ffi::Error TapImpl(int32_t device, int64_t consumer, ffi::RemainingArgs args,
                   ffi::RemainingRets) {
  Queue* q = GetQueue(device);
  if (q == nullptr) {
    return ffi::Error::InvalidArgument("minijax_tap: device ordinal " + std::to_string(device) +
                                       " out of range");
  }
  Tapped t;
  if (ffi::Error error = ReadTapped(args, &t); error.failure()) return error;
  const size_t total = t.layout.total;
  char* data = nullptr;  // a small tap is filled under the queue's lock, in a recycled slot
  if (total > kSmallSlot) {
    data = AllocPayload(&q->pool, total);
    if (data == nullptr) return ffi::Error::Internal("minijax_tap: out of memory");
    FillPayload(data, t);
  }
  const Admitted admitted =
      Enqueue(q, Message{consumer, 0, data, total, total + kMessageOverhead},
              [&](char* slot) { FillPayload(slot, t); });
  if (admitted == Admitted::kOutOfMemory) return ffi::Error::Internal("minijax_tap: out of memory");
  if (admitted == Admitted::kInterrupted) {
    return ffi::Error(ffi::ErrorCode::kCancelled,
                      "minijax_tap: interrupted (Ctrl-C) while this tap waited for room in "
                      "its device's tap queue; the computation was abandoned");
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(MinijaxTapHandler, TapImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Attr<int64_t>("consumer")
                                  .RemainingArgs()
                                  .RemainingRets());

// ---------------------------------------------------------------------------
// Payload: a writable buffer that owns one message's bytes.

namespace {

// A Payload either owns a message's buffer (its size field is 0) or holds a copy of a
// small tap's bytes itself, after its fields (its size field counts them).
struct PayloadObject {
  PyObject_VAR_HEAD
  char* data;
  Py_ssize_t size;
};
constexpr size_t kPayloadInline = (sizeof(PayloadObject) + 15) & ~size_t{15};  // 16-aligned

void PayloadDealloc(PyObject* self) {
  if (Py_SIZE(self) == 0) FreePayload(reinterpret_cast<PayloadObject*>(self)->data, /*gil=*/true);
  Py_TYPE(self)->tp_free(self);
}

int PayloadGetBuffer(PyObject* self, Py_buffer* view, int flags) {
  auto* p = reinterpret_cast<PayloadObject*>(self);
  return PyBuffer_FillInfo(view, self, p->data, p->size, /*readonly=*/0, flags);
}

Py_ssize_t PayloadLength(PyObject* self) { return reinterpret_cast<PayloadObject*>(self)->size; }

PyBufferProcs payload_as_buffer = {PayloadGetBuffer, nullptr};
PySequenceMethods payload_as_sequence = {PayloadLength};

PyTypeObject PayloadType = {PyVarObject_HEAD_INIT(nullptr, 0)};
minijax::HostArrayType g_host_array;  // set_host_array_type

PyObject* NewPayload(char* data, size_t size) {
  auto* p = PyObject_NewVar(PayloadObject, &PayloadType, 0);
  if (p == nullptr) {
    FreePayload(data, /*gil=*/true);
    return nullptr;
  }
  p->data = data;
  p->size = static_cast<Py_ssize_t>(size);
  return reinterpret_cast<PyObject*>(p);
}

// A Payload holding a copy of `size` bytes at `data`.
PyObject* NewInlinePayload(const char* data, size_t size) {
  auto* p = PyObject_NewVar(PayloadObject, &PayloadType, static_cast<Py_ssize_t>(size));
  if (p == nullptr) return nullptr;
  p->data = reinterpret_cast<char*>(p) + kPayloadInline;
  p->size = static_cast<Py_ssize_t>(size);
  std::memcpy(p->data, data, size);
  return reinterpret_cast<PyObject*>(p);
}

// A writable numpy array of `shape` (a tuple of ints) and `dtype` (a numpy dtype) over
// `data`, which `payload` owns; the array keeps `payload` alive.
PyObject* NewArrayView(PyObject* shape, PyObject* dtype, PyObject* payload, char* data) {
  if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > NPY_MAXDIMS || !PyArray_DescrCheck(dtype)) {
    PyErr_SetString(PyExc_TypeError, "a simple consumer needs a shape tuple and a numpy dtype");
    return nullptr;
  }
  const int nd = static_cast<int>(PyTuple_GET_SIZE(shape));
  npy_intp dims[NPY_MAXDIMS];
  for (int i = 0; i < nd; ++i) {
    dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
    if (dims[i] == -1 && PyErr_Occurred()) return nullptr;
  }
  Py_INCREF(dtype);  // stolen by PyArray_NewFromDescr
  PyObject* array = PyArray_NewFromDescr(&PyArray_Type, reinterpret_cast<PyArray_Descr*>(dtype),
                                         nd, dims, nullptr, data, NPY_ARRAY_CARRAY, nullptr);
  if (array == nullptr) return nullptr;
  Py_INCREF(payload);  // stolen by PyArray_SetBaseObject
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), payload) < 0) {
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

// The value a fast tap (see PyDeliver) hands its tap function, over the arrays of `payload`
// (whose bytes start at `data`, with `header`): a numpy view, or a HostArray when the entry
// says so, for an entry of one array; for an entry of several, (func, transforms, shapes,
// dtypes, nbytes, wrap, treedef), the tuple of them, or `treedef.unflatten` of their list
// when `treedef` is not None.  `wrap` is None or (avals, device), as for one array.  A new
// reference, or nullptr with a Python exception.
PyObject* FastValue(PyObject* entry, PyObject* payload, char* data, const uint64_t* header) {
  const Py_ssize_t entry_size = PyTuple_GET_SIZE(entry);
  PyObject* wrap = entry_size >= 6 ? PyTuple_GET_ITEM(entry, 5) : Py_None;
  if (entry_size != 7) {
    PyObject* array = NewArrayView(PyTuple_GET_ITEM(entry, 2), PyTuple_GET_ITEM(entry, 3),
                                   payload, data + header[2]);
    if (array == nullptr || wrap == Py_None) return array;
    PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(array), NPY_ARRAY_WRITEABLE);
    return minijax::WrapHostArray(g_host_array, array, PyTuple_GET_ITEM(wrap, 0),
                                  PyTuple_GET_ITEM(wrap, 1));
  }
  PyObject *shapes = PyTuple_GET_ITEM(entry, 2), *dtypes = PyTuple_GET_ITEM(entry, 3);
  PyObject* treedef = PyTuple_GET_ITEM(entry, 6);
  const Py_ssize_t n = PyTuple_GET_SIZE(shapes);
  if (!PyTuple_Check(dtypes) || PyTuple_GET_SIZE(dtypes) != n ||
      (wrap != Py_None && !(PyTuple_Check(wrap) && PyTuple_GET_SIZE(wrap) == 2 &&
                            PyTuple_Check(PyTuple_GET_ITEM(wrap, 0)) &&
                            PyTuple_GET_SIZE(PyTuple_GET_ITEM(wrap, 0)) == n))) {
    PyErr_SetString(PyExc_TypeError, "a fast tap entry of several arrays needs as many "
                                     "shapes, dtypes and avals as arrays");
    return nullptr;
  }
  PyObject* leaves = treedef == Py_None ? PyTuple_New(n) : PyList_New(n);
  for (Py_ssize_t k = 0; leaves != nullptr && k < n; ++k) {
    PyObject* array = NewArrayView(PyTuple_GET_ITEM(shapes, k), PyTuple_GET_ITEM(dtypes, k),
                                   payload, data + header[2 + k]);
    if (array != nullptr && wrap != Py_None) {
      PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(array), NPY_ARRAY_WRITEABLE);
      array = minijax::WrapHostArray(g_host_array, array,
                                     PyTuple_GET_ITEM(PyTuple_GET_ITEM(wrap, 0), k),
                                     PyTuple_GET_ITEM(wrap, 1));
    }
    if (array == nullptr) {
      Py_CLEAR(leaves);
      break;
    }
    if (treedef == Py_None) {
      PyTuple_SET_ITEM(leaves, k, array);
    } else {
      PyList_SET_ITEM(leaves, k, array);
    }
  }
  if (leaves == nullptr || treedef == Py_None) return leaves;
  static PyObject* unflatten = PyUnicode_InternFromString("unflatten");
  PyObject* call_args[] = {treedef, leaves};
  PyObject* value =
      unflatten ? PyObject_VectorcallMethod(unflatten, call_args, 2, nullptr) : nullptr;
  Py_DECREF(leaves);
  return value;
}

bool ParseDevice(PyObject* arg, Queue** q) {
  long device = PyLong_AsLong(arg);
  if (device == -1 && PyErr_Occurred()) return false;
  *q = GetQueue(static_cast<int>(device));
  if (*q == nullptr) {
    PyErr_Format(PyExc_ValueError, "device ordinal %ld is negative", device);
    return false;
  }
  return true;
}

// Checks the argument count of a module function called as `usage` and parses its first
// argument, a device ordinal.
bool DeviceCall(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t expected, const char* usage,
                Queue** q) {
  if (nargs != expected) {
    PyErr_SetString(PyExc_TypeError, usage);
    return false;
  }
  return ParseDevice(args[0], q);
}

// ---------------------------------------------------------------------------
// StreamedDispatch: the dispatching side of a single-device program with effects on the
// shared execution stream (`Executable._make_execute_streamed` in Python says what it
// does), in C for the common case, which costs no Python frame.  Called with the argument
// buffers, it checks what `before_execution` and the host-call depth would have it do
// otherwise (the device's receiver is not running, the calling thread is a receiver, a
// tap waits for room in the queue, the call is made from inside a host call, a program that
// calls the host runs on the device, or the dispatch is the kPace-th since the device's
// last progress mark and that mark has not been passed) and hands all those to
// `slow(buffers)`, the Python version; else it switches the thread to the shared stream,
// runs `execute(buffers)`, switches back, sets `mark[0] = True` (a barrier's fence must
// come after this execution) and returns the execution's results (the kPace-th wrapped by
// `mark_progress`, which makes this execution the device's next progress mark).

struct StreamedDispatch {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  int slot;
  PyObject* execute;     // execute_sharded of the program
  PyObject* get_stream;  // jaxlib's get_execution_stream_id
  PyObject* set_stream;  // and set_execution_stream_id
  PyObject* stream_id;   // the shared stream
  PyObject* depth;       // host_calls.host_call_depth
  PyObject* busy;        // [programs calling the host running on the device]
  PyObject* mark;        // [streamed work since the device's last fence]
  PyObject* slow;
  PyObject* ordinal;     // the device's ordinal, the key of its progress mark in `marks`
  PyObject* marks;       // receiver._marks: by ordinal, arrays ready once the mark is passed
  PyObject* mark_progress;  // receiver.mark_progress(ordinal, results)
};

PyObject* g_is_ready_name;

// Whether the device has passed its last progress mark (or has none); false, with no error
// set, when it has not or its arrays cannot say (the Python version then decides).
bool MarkPassed(StreamedDispatch* self) {
  PyObject* mark = PyDict_GetItemWithError(self->marks, self->ordinal);
  if (mark == nullptr) {
    if (!PyErr_Occurred()) return true;
    PyErr_Clear();
    return false;
  }
  if (!PyList_Check(mark)) return false;
  Py_INCREF(mark);
  bool passed = true;
  for (Py_ssize_t i = 0; passed && i < PyList_GET_SIZE(mark); ++i) {
    PyObject* ready = PyObject_CallMethodNoArgs(PyList_GET_ITEM(mark, i), g_is_ready_name);
    passed = ready == Py_True;
    if (ready == nullptr) PyErr_Clear();  // a donated output, or a failed run's
    Py_XDECREF(ready);
  }
  Py_DECREF(mark);
  return passed;
}

PyObject* StreamedDispatchCall(PyObject* self_obj, PyObject* const* args, size_t nargsf,
                               PyObject* kwnames) {
  auto* self = reinterpret_cast<StreamedDispatch*>(self_obj);
  if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != nullptr) {
    PyErr_SetString(PyExc_TypeError, "a streamed dispatch takes the argument buffers");
    return nullptr;
  }
  Queue* q = g_queues[self->slot].load(std::memory_order_acquire);
  const int32_t dispatched = g_dispatched[self->slot].load(std::memory_order_relaxed);
  const bool pace = dispatched + 1 >= kPace;
  bool plain = q != nullptr && q->receiving.load(std::memory_order_acquire) && !t_receiver &&
               g_waiting[self->slot].load(std::memory_order_acquire) == 0;
  if (plain) {
    PyObject* item = PyList_GET_ITEM(self->busy, 0);
    plain = item == Py_False || (PyLong_CheckExact(item) && PyLong_AsLong(item) == 0);
  }
  if (plain) {
    PyObject* depth = PyObject_CallNoArgs(self->depth);
    if (depth == nullptr) return nullptr;
    plain = PyLong_CheckExact(depth) && PyLong_AsLong(depth) == 0;
    Py_DECREF(depth);
  }
  if (plain && pace) plain = MarkPassed(self);  // else the Python version waits for it
  if (!plain) return PyObject_Vectorcall(self->slow, args, 1, nullptr);
  if (pace) {  // this execution becomes the device's next progress mark
    if (PyDict_DelItem(self->marks, self->ordinal) < 0) PyErr_Clear();  // (none is fine)
  }
  g_dispatched[self->slot].store(pace ? 0 : dispatched + 1, std::memory_order_relaxed);  // (GIL)
  PyObject* previous = PyObject_CallNoArgs(self->get_stream);
  if (previous == nullptr) return nullptr;
  PyObject* set = PyObject_CallOneArg(self->set_stream, self->stream_id);
  if (set == nullptr) {
    Py_DECREF(previous);
    return nullptr;
  }
  Py_DECREF(set);
  PyObject* results = PyObject_Vectorcall(self->execute, args, 1, nullptr);
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);  // (an execution's error survives the switch back)
  set = PyObject_CallOneArg(self->set_stream, previous);
  Py_DECREF(previous);
  if (set == nullptr) {
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    Py_XDECREF(results);
    return nullptr;
  }
  Py_DECREF(set);
  PyErr_Restore(type, value, traceback);
  if (results == nullptr) return nullptr;
  Py_INCREF(Py_True);
  if (PyList_SetItem(self->mark, 0, Py_True) < 0) {
    Py_DECREF(results);
    return nullptr;
  }
  if (!pace) return results;
  PyObject* marked = PyObject_CallFunctionObjArgs(self->mark_progress, self->ordinal, results,
                                                  nullptr);
  Py_DECREF(results);
  return marked;
}

#define STREAMED_DISPATCH_FIELDS(apply)                                                     \
  apply(execute) apply(get_stream) apply(set_stream) apply(stream_id) apply(depth) apply(busy) \
      apply(mark) apply(slow) apply(ordinal) apply(marks) apply(mark_progress)

int StreamedDispatchTraverse(PyObject* self_obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<StreamedDispatch*>(self_obj);
#define VISIT(field) Py_VISIT(self->field);
  STREAMED_DISPATCH_FIELDS(VISIT)
#undef VISIT
  return 0;
}

int StreamedDispatchClear(PyObject* self_obj) {
  auto* self = reinterpret_cast<StreamedDispatch*>(self_obj);
#define CLEAR(field) Py_CLEAR(self->field);
  STREAMED_DISPATCH_FIELDS(CLEAR)
#undef CLEAR
  return 0;
}

void StreamedDispatchDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  StreamedDispatchClear(self);
  Py_TYPE(self)->tp_free(self);
}

PyTypeObject StreamedDispatchType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// streamed_dispatch(device, execute, get_stream, set_stream, stream_id, depth, busy, mark,
// slow, marks, mark_progress) -> a StreamedDispatch (see above).
PyObject* PyStreamedDispatch(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  static const char* usage =
      "streamed_dispatch(device, execute, get_stream, set_stream, stream_id, depth, busy: list, "
      "mark: list, slow, marks: dict, mark_progress)";
  Queue* unused;
  if (!DeviceCall(args, nargs, 11, usage, &unused)) return nullptr;
  if (!PyList_Check(args[6]) || PyList_GET_SIZE(args[6]) != 1 || !PyList_Check(args[7]) ||
      PyList_GET_SIZE(args[7]) != 1 || !PyDict_Check(args[9])) {
    PyErr_SetString(PyExc_TypeError, usage);
    return nullptr;
  }
  auto* self = PyObject_GC_New(StreamedDispatch, &StreamedDispatchType);
  if (self == nullptr) return nullptr;
  self->vectorcall = StreamedDispatchCall;
  self->slot = static_cast<int>(PyLong_AsLong(args[0]) % kMaxDevices);
  PyObject** fields[] = {&self->ordinal, &self->execute, &self->get_stream, &self->set_stream,
                         &self->stream_id, &self->depth, &self->busy, &self->mark,
                         &self->slow, &self->marks, &self->mark_progress};
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    *fields[i] = args[i];
  }
  PyObject_GC_Track(self);
  return reinterpret_cast<PyObject*>(self);
}

// ---------------------------------------------------------------------------
// Module functions.

PyObject* PyHandler(PyObject*, PyObject*) {
  return PyCapsule_New(reinterpret_cast<void*>(&MinijaxTapHandler), nullptr, nullptr);
}

PyObject* PySetCapacity(PyObject*, PyObject* arg) {
  long long capacity = PyLong_AsLongLong(arg);
  if (capacity == -1 && PyErr_Occurred()) return nullptr;
  if (capacity <= 0) {
    PyErr_SetString(PyExc_ValueError, "tap queue capacity must be positive");
    return nullptr;
  }
  g_capacity.store(static_cast<size_t>(capacity));
  for (int d = 0; d < kMaxDevices; ++d) {
    Queue* q = g_queues[d].load(std::memory_order_acquire);
    if (q == nullptr) continue;
    { std::lock_guard<std::mutex> lock(q->mu); }
    q->has_room.notify_all();
  }
  Py_RETURN_NONE;
}

PyObject* PySetSpin(PyObject*, PyObject* arg) {
  long long ns = PyLong_AsLongLong(arg);
  if (ns == -1 && PyErr_Occurred()) return nullptr;
  g_spin_ns.store(ns < 0 ? 0 : ns);
  Py_RETURN_NONE;
}

PyObject* PySetLinger(PyObject*, PyObject* arg) {
  long long ns = PyLong_AsLongLong(arg);
  if (ns == -1 && PyErr_Occurred()) return nullptr;
  g_linger_ns.store(ns < 0 ? 0 : ns);
  Py_RETURN_NONE;
}

PyObject* PyCapacity(PyObject*, PyObject*) { return PyLong_FromSize_t(g_capacity.load()); }

PyObject* PyContended(PyObject*, PyObject*) { return PyBool_FromLong(Contended()); }

// Waits for messages and takes up to `max_count` of them.  Before sleeping it spins for
// g_spin_ns, so that a receiver keeping up with a device is woken by no system call.  It
// first counts the previous batch as delivered (see WaitDelivered).
//
// Then it lingers while taps keep coming: until none arrived for g_linger_ns, `max_count`
// are queued, the queue is full, closed or flushed, or kMaxLinger has passed.  Tap
// functions need the GIL, which the dispatching thread takes back after every execution;
// a receiver that grabbed it for each tap of a burst of calls would make each call wait
// for a GIL hand-off (a thread wake-up, 50-100 µs on a virtual machine).  Lingering
// delivers a burst in one batch, once the calls stop or a barrier (`flush`) asks for it.
// Lingering polls rather than sleeps, so that a flush is seen at once.
//
// It first gives the small slots in `returned` back to the producers (see kSmallSlot).
void PopBatch(Queue* q, size_t max_count, std::vector<char*>* returned,
              std::vector<Message>* batch) {
  if (!returned->empty()) {
    {
      std::lock_guard<std::mutex> lock(q->mu);
      RecycleSmallSlots(&q->pool, returned);
    }
    for (char* p : *returned) std::free(p - kAlignment);
    returned->clear();
  }
  if (q->in_flight > 0) {  // the previous batch has been processed
    q->delivered.fetch_add(q->in_flight, std::memory_order_acq_rel);
    q->in_flight = 0;
    { std::lock_guard<std::mutex> lock(q->mu); }  // no waiter misses the notification
    q->drained.notify_all();
  }
  if (q->n_items.load(std::memory_order_acquire) == 0) {
    SpinUntil(std::chrono::steady_clock::now() +
                  std::chrono::nanoseconds(g_spin_ns.load(std::memory_order_relaxed)),
              [&] { return q->n_items.load(std::memory_order_acquire) != 0; });
  }
  std::unique_lock<std::mutex> lock(q->mu);
  while (q->items.empty() && !q->closed) {
    q->consumer_waiting = true;
    q->has_data.wait(lock);
    q->consumer_waiting = false;
  }
  auto linger = std::chrono::nanoseconds(g_linger_ns.load(std::memory_order_relaxed));
  const bool contended = Contended();
  if (contended) {  // deliver in fewer, larger batches (see kContendedYield)
    linger *= kLingerUnderLoad;
    max_count *= kBatchUnderLoad;
  }
  if (linger.count() > 0) {
    const auto now = std::chrono::steady_clock::now();
    const auto give_up = now + (contended ? kMaxLingerUnderLoad : kMaxLinger);
    size_t seen = q->items.size();
    auto quiet_until = now + linger;
    auto stop_lingering = [&] {
      return q->hurry.load(std::memory_order_acquire) ||
             q->n_items.load(std::memory_order_acquire) >= max_count;
    };
    while (!stop_lingering() && std::chrono::steady_clock::now() < give_up) {
      lock.unlock();
      const bool stopped = SpinUntil(quiet_until, stop_lingering);
      lock.lock();
      // Contended: sleep out the window (a flush, a full queue or close wake it).
      if (!stopped) q->has_data.wait_until(lock, quiet_until, stop_lingering);
      if (q->items.size() == seen) break;  // quiet for a whole window
      seen = q->items.size();
      // Contended, each window that saw taps doubles the next: a receiver that wakes up
      // preempts the dispatching thread, which then waits behind every other runnable one.
      if (contended) linger = std::min<std::chrono::nanoseconds>(2 * linger, kMaxLinger);
      quiet_until = std::min(std::chrono::steady_clock::now() + linger, give_up);
    }
  }
  const size_t freed = q->items.Take(max_count, batch);
  if (q->items.empty() && !q->closed) q->hurry.store(false, std::memory_order_release);
  q->n_items.store(q->items.size(), std::memory_order_release);
  q->used -= freed;
  q->in_flight = batch->size();
  const bool wake = freed > 0 && q->producers_waiting > 0;
  lock.unlock();
  if (wake) q->has_room.notify_all();
}

// Waits until the receiver has finished with `target` taps, or `timeout` passes.
bool WaitDelivered(Queue* q, uint64_t target, std::chrono::nanoseconds timeout) {
  auto reached = [&] { return q->delivered.load(std::memory_order_acquire) >= target; };
  const auto start = std::chrono::steady_clock::now();
  if (SpinUntil(start + std::min<std::chrono::nanoseconds>(kDrainSpin, timeout), reached,
                /*adapt=*/false)) {
    return true;
  }
  std::unique_lock<std::mutex> lock(q->mu);
  return q->drained.wait_until(lock, start + timeout, reached);
}

// push(device, consumer, arrays): copies objects exposing C-contiguous buffers into
// the device's queue, as the device handler does; used by the Python-callback mechanism.
PyObject* PyPush(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Queue* q;
  if (!DeviceCall(args, nargs, 3, "push(device, consumer, arrays)", &q)) return nullptr;
  long long consumer = PyLong_AsLongLong(args[1]);
  if (consumer == -1 && PyErr_Occurred()) return nullptr;
  PyObject* seq = PySequence_Fast(args[2], "arrays must be a sequence");
  if (seq == nullptr) return nullptr;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  std::vector<Py_buffer> views(n);
  Layout layout = HeaderFor(static_cast<size_t>(n));
  Py_ssize_t acquired = 0;
  bool ok = true;
  for (; acquired < n; ++acquired) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, acquired);
    if (PyObject_GetBuffer(item, &views[acquired], PyBUF_C_CONTIGUOUS) != 0) {
      ok = false;
      break;
    }
    layout.total += AlignUp(static_cast<size_t>(views[acquired].len));
  }
  char* data = ok ? AllocPayload(&q->pool, layout.total) : nullptr;
  if (ok && data == nullptr) {
    PyErr_NoMemory();
    ok = false;
  }
  Admitted admitted = Admitted::kQueued;
  if (ok) {
    Py_BEGIN_ALLOW_THREADS
    uint64_t* header = HeaderOf(data);
    header[1] = static_cast<uint64_t>(n);
    size_t offset = layout.header;
    for (Py_ssize_t i = 0; i < n; ++i) {
      header[2 + i] = offset;
      CopyIntoPayload(data, data + offset, views[i].buf, static_cast<size_t>(views[i].len));
      offset += AlignUp(static_cast<size_t>(views[i].len));
    }
    admitted = Enqueue(q, Message{consumer, 0, data, layout.total, layout.total + kMessageOverhead},
                       [](char*) {});
    Py_END_ALLOW_THREADS
  }
  for (Py_ssize_t i = 0; i < acquired; ++i) PyBuffer_Release(&views[i]);
  Py_DECREF(seq);
  if (!ok) return nullptr;
  if (admitted == Admitted::kInterrupted) {
    if (t_interrupt != nullptr) {
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(t_interrupt)), t_interrupt);
      return nullptr;  // t_interrupt stays for take_interrupt()
    }
    PyErr_SetString(PyExc_KeyboardInterrupt,  // off the main thread (see interrupts.h)
                    "Ctrl-C while this tap waited for room in its device's tap queue");
    return nullptr;
  }
  Py_RETURN_NONE;
}

// deliver(device, max_count, fast, slow, on_error) -> (count, nbytes), or None once the
// queue is closed and empty.  Waits for a batch without the GIL, then delivers it in
// order.  A tap whose consumer id is in the dict `fast`, as (func, transforms, shape, dtype,
// nbytes[, (aval, device)]), is delivered here: func(array, transforms), the array a numpy
// view of the payload (read-only and wrapped in a HostArray of that aval on that device when
// the entry says so, see host_array.h); a tap of several arrays likewise, from an entry
// (func, transforms, shapes, dtypes, nbytes, wrap, treedef) (see FastValue).  If func
// raises, on_error(consumer_id, exception).  Any other tap goes to slow(consumer_id,
// payload, offsets), which returns the bytes it delivered.  Doing the common cases in C
// saves most of the interpreter's work per tap.
PyObject* PyDeliver(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  static const char* usage = "deliver(device, max_count, fast: dict, slow, on_error)";
  Queue* q;
  if (!DeviceCall(args, nargs, 5, usage, &q)) return nullptr;
  if (!PyDict_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, usage);
    return nullptr;
  }
  Py_ssize_t max_count = PyLong_AsSsize_t(args[1]);
  if (max_count == -1 && PyErr_Occurred()) return nullptr;
  if (max_count < 1) max_count = 1;
  t_receiver = true;
  PyObject *fast = args[2], *slow = args[3], *on_error = args[4];
  static thread_local std::vector<Message> spare;  // the last batch's, emptied (see MessageFifo)
  std::vector<Message> batch;
  batch.swap(spare);
  static thread_local std::vector<char*> returned;  // empty between calls
  returned.swap(q->pool.small_returned);  // with the GIL, which guards small_returned
  Py_BEGIN_ALLOW_THREADS
  PopBatch(q, static_cast<size_t>(max_count), &returned, &batch);
  Py_END_ALLOW_THREADS
  if (batch.empty()) Py_RETURN_NONE;
  unsigned long long nbytes = 0;
  size_t done = 0;
  bool failed = false;
  for (; done < batch.size() && !failed; ++done) {
    Message& m = batch[done];
    const uint64_t* header = HeaderOf(m.data);
    PyObject* id = PyLong_FromLongLong(m.consumer);
    PyObject* entry = id ? PyDict_GetItemWithError(fast, id) : nullptr;  // borrowed
    const Py_ssize_t entry_size = entry != nullptr && PyTuple_Check(entry)
                                      ? PyTuple_GET_SIZE(entry) : 0;
    const bool simple = ((entry_size == 5 || entry_size == 6) && header[1] == 1) ||
                        (entry_size == 7 && PyTuple_Check(PyTuple_GET_ITEM(entry, 2)) &&
                         PyTuple_GET_SIZE(PyTuple_GET_ITEM(entry, 2)) ==
                             static_cast<Py_ssize_t>(header[1]));
    // A simple tap in a small slot is copied into a Payload of its own and its slot
    // recycled at once (see kSmallSlot); any other Payload owns its message's buffer.
    // numpy views either without copying.
    const bool copy = simple && IsSmallSlot(m.data);
    PyObject* payload = copy ? NewInlinePayload(m.data, m.size) : NewPayload(m.data, m.size);
    if (copy) FreePayload(m.data, /*gil=*/true);
    if (id == nullptr || payload == nullptr || PyErr_Occurred()) {
      Py_XDECREF(id);
      Py_XDECREF(payload);
      failed = true;
      continue;
    }
    char* const data = reinterpret_cast<PayloadObject*>(payload)->data;
    header = HeaderOf(data);  // the recycled slot is not read again
    if (simple) {
      Py_INCREF(entry);  // the tap function may change `fast`
      PyObject* value = FastValue(entry, payload, data, header);
      PyObject* result = nullptr;
      if (value != nullptr) {
        PyObject* call_args[] = {value, PyTuple_GET_ITEM(entry, 1)};
        result = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 0), call_args, 2, nullptr);
        Py_DECREF(value);
      }
      if (result != nullptr) {
        Py_DECREF(result);
        nbytes += PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(entry, 4));
        if (PyErr_Occurred()) failed = true;
      } else {
        PyObject *type, *exc, *traceback;
        PyErr_Fetch(&type, &exc, &traceback);
        PyErr_NormalizeException(&type, &exc, &traceback);
        if (exc != nullptr && traceback != nullptr) PyException_SetTraceback(exc, traceback);
        PyObject* handled =
            PyObject_CallFunctionObjArgs(on_error, id, exc ? exc : Py_None, nullptr);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(traceback);
        if (handled == nullptr) failed = true;
        Py_XDECREF(handled);
      }
      Py_DECREF(entry);
    } else {
      PyObject* offsets = PyTuple_New(static_cast<Py_ssize_t>(header[1]));
      for (uint64_t k = 0; offsets != nullptr && k < header[1]; ++k) {
        PyTuple_SET_ITEM(offsets, k, PyLong_FromUnsignedLongLong(header[2 + k]));
      }
      PyObject* delivered =
          offsets ? PyObject_CallFunctionObjArgs(slow, id, payload, offsets, nullptr) : nullptr;
      Py_XDECREF(offsets);
      if (delivered == nullptr) {
        failed = true;
      } else {
        nbytes += PyLong_AsUnsignedLongLong(delivered);
        Py_DECREF(delivered);
        if (PyErr_Occurred()) failed = true;
      }
    }
    Py_DECREF(id);
    Py_DECREF(payload);
  }
  for (size_t k = done; k < batch.size(); ++k) FreePayload(batch[k].data, /*gil=*/true);
  const size_t count = batch.size();
  batch.clear();
  batch.swap(spare);
  if (failed) return nullptr;
  return Py_BuildValue("(nK)", static_cast<Py_ssize_t>(count), nbytes);
}

PyObject* SetClosed(PyObject* arg, bool closed) {
  Queue* q;
  if (!ParseDevice(arg, &q)) return nullptr;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    q->closed = closed;
    q->receiving.store(!closed, std::memory_order_release);
    q->hurry.store(closed, std::memory_order_release);
  }
  q->has_data.notify_all();
  q->has_room.notify_all();  // a closed queue admits at once
  Py_RETURN_NONE;
}

PyObject* PyProducersWaiting(PyObject*, PyObject* arg) {
  Queue* q;
  if (!ParseDevice(arg, &q)) return nullptr;
  std::lock_guard<std::mutex> lock(q->mu);
  return PyLong_FromLong(q->producers_waiting);
}

PyObject* PyTakeInterrupt(PyObject*, PyObject*) {
  PyObject* exc = t_interrupt;
  t_interrupt = nullptr;
  if (exc == nullptr) Py_RETURN_NONE;
  return exc;  // the reference t_interrupt owned
}

// In a child process after fork: every queue starts afresh (a parent thread may have held a
// queue's mutex at the fork; the old queues are leaked, never touched again).
PyObject* PyResetAfterFork(PyObject*, PyObject*) {
  for (int d = 0; d < kMaxDevices; ++d) {
    g_queues[d].store(nullptr, std::memory_order_release);
    g_waiting[d].store(0, std::memory_order_release);
    g_dispatched[d].store(0, std::memory_order_release);
  }
  t_interrupt = nullptr;
  Py_RETURN_NONE;
}

PyObject* PyFlush(PyObject*, PyObject* arg) {
  Queue* q;
  if (!ParseDevice(arg, &q)) return nullptr;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    if (!q->items.empty()) q->hurry.store(true, std::memory_order_release);
  }
  q->has_data.notify_all();
  Py_RETURN_NONE;
}

// wait_delivered(device, target, timeout_s) -> whether the receiver has finished with
// `target` taps; waits without the GIL.
PyObject* PyWaitDelivered(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Queue* q;
  if (!DeviceCall(args, nargs, 3, "wait_delivered(device, target, timeout_s)", &q)) {
    return nullptr;
  }
  unsigned long long target = PyLong_AsUnsignedLongLong(args[1]);
  if (target == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return nullptr;
  double timeout_s = PyFloat_AsDouble(args[2]);
  if (timeout_s == -1.0 && PyErr_Occurred()) return nullptr;
  bool reached;
  Py_BEGIN_ALLOW_THREADS
  const auto timeout = std::chrono::nanoseconds(static_cast<int64_t>(timeout_s * 1e9));
  reached = WaitDelivered(q, target, timeout);
  Py_END_ALLOW_THREADS
  return PyBool_FromLong(reached);
}

PyObject* PyClose(PyObject*, PyObject* arg) { return SetClosed(arg, true); }
PyObject* PyOpen(PyObject*, PyObject* arg) { return SetClosed(arg, false); }

PyObject* PyEnqueued(PyObject*, PyObject* arg) {
  Queue* q;
  if (!ParseDevice(arg, &q)) return nullptr;
  std::lock_guard<std::mutex> lock(q->mu);
  return PyLong_FromUnsignedLongLong(q->enqueued);
}

// counters(device) -> (enqueued, bytes_enqueued, queued_bytes, high_water, blocked_ns)
PyObject* PyCounters(PyObject*, PyObject* arg) {
  Queue* q;
  if (!ParseDevice(arg, &q)) return nullptr;
  std::lock_guard<std::mutex> lock(q->mu);
  return Py_BuildValue("(KKnnL)", static_cast<unsigned long long>(q->enqueued),
                       static_cast<unsigned long long>(q->bytes_enqueued),
                       static_cast<Py_ssize_t>(q->used), static_cast<Py_ssize_t>(q->high_water),
                       static_cast<long long>(q->blocked_ns));
}

PyObject* PyResetHighWater(PyObject*, PyObject* arg) {
  Queue* q;
  if (!ParseDevice(arg, &q)) return nullptr;
  std::lock_guard<std::mutex> lock(q->mu);
  q->high_water = q->used;
  q->blocked_ns = 0;
  Py_RETURN_NONE;
}

PyObject* PySetHostArrayType(PyObject*, PyObject* cls) {
  return minijax::SetHostArrayType(&g_host_array, cls);
}

PyMethodDef methods[] = {
    {"set_host_array_type", PySetHostArrayType, METH_O,
     "set_host_array_type(HostArray): the class of the values of fast entries that carry "
     "(aval, device) as a sixth item (see host_array.h)."},
    {"handler", PyHandler, METH_NOARGS,
     "handler() -> PyCapsule holding the XLA FFI handler (NULL name, no destructor)."},
    {"set_capacity", PySetCapacity, METH_O, "set_capacity(bytes): bound of every device queue."},
    {"capacity", PyCapacity, METH_NOARGS, "capacity() -> bytes."},
    {"contended", PyContended, METH_NOARGS,
     "contended() -> whether a receiver found the CPUs busy lately (then nobody spins, and "
     "receivers linger asleep and deliver in larger batches)."},
    {"set_spin_ns", PySetSpin, METH_O,
     "set_spin_ns(ns): how long an idle receiver polls before it sleeps (default 50 us)."},
    {"set_linger_ns", PySetLinger, METH_O,
     "set_linger_ns(ns): the quiet time that ends a receiver's wait for more taps "
     "(default 200 us; 0 delivers every tap at once)."},
    {"flush", PyFlush, METH_O, "flush(device): deliver what is queued now, without lingering."},
    {"deliver", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PyDeliver)),
     METH_FASTCALL,
     "deliver(device, max_count, fast, slow, on_error) -> (count, nbytes) or None "
     "once closed and empty: pops a batch and delivers it in order (see the source)."},
    {"wait_delivered",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PyWaitDelivered)),
     METH_FASTCALL,
     "wait_delivered(device, target, timeout_s) -> bool: whether the receiver has finished "
     "with `target` taps (a batch counts once it asks for the next); waits without the GIL."},
    {"push", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PyPush)), METH_FASTCALL,
     "push(device, consumer, arrays): copies the arrays into the device queue."},
    {"close", PyClose, METH_O,
     "close(device): pop returns None once the queue is empty; pushes no longer wait."},
    {"open", PyOpen, METH_O, "open(device): undoes close."},
    {"producers_waiting", PyProducersWaiting, METH_O,
     "producers_waiting(device) -> taps waiting for room in the queue now."},
    {"take_interrupt", PyTakeInterrupt, METH_NOARGS,
     "take_interrupt() -> the exception a signal handler raised while a tap of this thread "
     "waited for room (then forgotten), or None."},
    {"reset_after_fork", PyResetAfterFork, METH_NOARGS,
     "reset_after_fork(): in a forked child, gives every device a fresh, empty queue."},
    {"enqueued", PyEnqueued, METH_O, "enqueued(device) -> taps admitted so far."},
    {"counters", PyCounters, METH_O,
     "counters(device) -> (enqueued, bytes_enqueued, queued_bytes, high_water, blocked_ns)."},
    {"streamed_dispatch",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PyStreamedDispatch)),
     METH_FASTCALL,
     "streamed_dispatch(device, execute, get_stream, set_stream, stream_id, depth, busy, mark, "
     "slow, marks, mark_progress): runs a program with effects on the shared stream (see the "
     "source)."},
    {"reset_high_water", PyResetHighWater, METH_O,
     "reset_high_water(device): high-water mark := queued bytes; blocked time := 0."},
    MINIJAX_INTERRUPTS_METHODS
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_native",
                          "Native tap queue and XLA FFI handler for minijax.", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__native() {
  PayloadType.tp_name = "minijax.runtime.taps._native.Payload";
  PayloadType.tp_basicsize = kPayloadInline;
  PayloadType.tp_itemsize = 1;
  PayloadType.tp_dealloc = PayloadDealloc;
  PayloadType.tp_flags = Py_TPFLAGS_DEFAULT;
  PayloadType.tp_doc = "The bytes of one tap, viewed by numpy without a copy.";
  PayloadType.tp_as_buffer = &payload_as_buffer;
  PayloadType.tp_as_sequence = &payload_as_sequence;
  if (_import_array() < 0) return nullptr;
  if (PyType_Ready(&PayloadType) < 0 ||
      !interrupts::ReadyWatchedType("minijax.runtime.taps._native.Watched") ||
      !ReadyCallableType(&StreamedDispatchType, "minijax.runtime.taps._native.StreamedDispatch",
                         sizeof(StreamedDispatch), offsetof(StreamedDispatch, vectorcall),
                         StreamedDispatchTraverse, StreamedDispatchClear, StreamedDispatchDealloc,
                         "The dispatch of a program on the shared stream (see the source).")) {
    return nullptr;
  }
  g_is_ready_name = PyUnicode_InternFromString("is_ready");
  if (g_is_ready_name == nullptr) return nullptr;
  PyObject* m = PyModule_Create(&module_def);
  if (m == nullptr) return nullptr;
  Py_INCREF(&PayloadType);
  PyObject* waiting = PyMemoryView_FromMemory(reinterpret_cast<char*>(g_waiting),
                                              sizeof(g_waiting), PyBUF_READ);
  PyObject* waiting_ints = waiting ? PyObject_CallMethod(waiting, "cast", "s", "i") : nullptr;
  Py_XDECREF(waiting);
  if (waiting_ints == nullptr || PyModule_AddObject(m, "waiting", waiting_ints) < 0) {
    Py_XDECREF(waiting_ints);
    Py_DECREF(m);
    return nullptr;
  }
  PyObject* dispatched = PyMemoryView_FromMemory(reinterpret_cast<char*>(g_dispatched),
                                                 sizeof(g_dispatched), PyBUF_WRITE);
  PyObject* dispatched_ints =
      dispatched ? PyObject_CallMethod(dispatched, "cast", "s", "i") : nullptr;
  Py_XDECREF(dispatched);
  if (dispatched_ints == nullptr || PyModule_AddObject(m, "dispatched", dispatched_ints) < 0) {
    Py_XDECREF(dispatched_ints);
    Py_DECREF(m);
    return nullptr;
  }
  if (PyModule_AddObject(m, "Payload", reinterpret_cast<PyObject*>(&PayloadType)) < 0 ||
      PyModule_AddIntConstant(m, "PACE", kPace) < 0 ||
      PyModule_AddIntConstant(m, "ALIGNMENT", kAlignment) < 0 ||
      PyModule_AddIntConstant(m, "MESSAGE_OVERHEAD", kMessageOverhead) < 0 ||
      PyModule_AddIntConstant(m, "MAX_DEVICES", kMaxDevices) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
