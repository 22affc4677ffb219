// Per-thread state of Strata's object graph: the slots of the property wrappers of managed objects (see
// PropertySlots.swift), the context running work on the thread (see Unsafe.swift), and whether an
// Observation tracking recorded a probe (see ManagedObject+Observation.swift). Also one process-wide
// flag: whether the concurrency debug mode is on (see ConcurrencyDebug.swift).
//
// Every @Attribute, @Relationship and @Derived of every object made takes the next slot number of its
// thread. Swift has no thread-local variables of its own; through pthread keys each slot cost a
// once-check and a call. A C11 thread-local is one load and one store.
#ifndef CSTRATASLOTS_H
#define CSTRATASLOTS_H

#include <stddef.h>
#include <stdint.h>

extern _Thread_local int32_t strata_slot_counter;
extern _Thread_local void *_Nullable strata_slot_collector;
extern _Thread_local const void *_Nullable strata_running_signals;
extern _Thread_local int32_t strata_observation_probe_hits;
extern _Thread_local void *_Nullable const *_Nullable strata_observation_slot;

/// Whether `STRATA_CONCURRENCY_DEBUG` was set to a value other than `0` when the process started: read
/// once, before `main`, by a constructor, so that every check of it is one load and one branch.
extern int32_t strata_concurrency_debug;

static inline int32_t strata_concurrency_debug_enabled(void) { return strata_concurrency_debug; }

/// The calling thread's kernel thread ID (what `ps -L` and debuggers show), for the debug mode's messages.
long strata_thread_id(void);

/// The slot for a wrapper being initialized now.
static inline int32_t strata_take_slot(void) { return strata_slot_counter++; }

/// The number of slots handed out since the last reset, resetting the count.
static inline int32_t strata_take_slot_count(void) {
  int32_t count = strata_slot_counter;
  strata_slot_counter = 0;
  return count;
}

static inline int32_t strata_slot_count(void) { return strata_slot_counter; }
static inline void strata_set_slot_count(int32_t count) { strata_slot_counter = count; }

/// The prototype collector being filled on this thread (a retained object), or NULL.
static inline void *_Nullable strata_collector(void) { return strata_slot_collector; }
static inline void strata_set_collector(void *_Nullable collector) { strata_slot_collector = collector; }

/// The change signals of the context whose work runs on this thread now (not retained), or NULL.
static inline const void *_Nullable strata_running_context_signals(void) { return strata_running_signals; }
static inline void strata_set_running_context_signals(const void *_Nullable signals) { strata_running_signals = signals; }

/// Whether Observation recorded the probe's key path since the last call, resetting the answer (see
/// ManagedObject+Observation.swift: its hash counts here while a `withObservationTracking` is recording).
static inline int32_t strata_take_observation_probe_hits(void) {
  int32_t hits = strata_observation_probe_hits;
  strata_observation_probe_hits = 0;
  return hits;
}
static inline void strata_note_observation_probe_hit(void) { strata_observation_probe_hits = 1; }

/// Whether a `withObservationTracking` may be recording on this thread: Observation's own thread-local,
/// read where it lies once this thread knows where that is (see ManagedObject+Observation.swift); until
/// then, and where it cannot be found, "maybe".
static inline int strata_observation_may_be_recording(void) {
  void *const *slot = strata_observation_slot;
  return slot == 0 || *slot != 0;
}
static inline void *_Nullable const *_Nullable strata_observation_tls_slot(void) { return strata_observation_slot; }
static inline void strata_set_observation_tls_slot(void *_Nullable const *_Nullable slot) { strata_observation_slot = slot; }

/// The TLS module ID of libswiftObservation (0 when it is not a loaded shared library with a
/// thread-local block), and the size of that block in `size`.
size_t strata_observation_tls_module(size_t *_Nonnull size);
/// The calling thread's thread-local block of the TLS module `module`.
void *_Nullable strata_tls_block(size_t module);

#endif
