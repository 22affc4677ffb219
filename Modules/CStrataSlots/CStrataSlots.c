#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include "CStrataSlots.h"
#include <stdlib.h>

_Thread_local int32_t strata_slot_counter = 0;
_Thread_local void *_Nullable strata_slot_collector = 0;
_Thread_local const void *_Nullable strata_running_signals = 0;
_Thread_local int32_t strata_observation_probe_hits = 0;
_Thread_local void *_Nullable const *_Nullable strata_observation_slot = 0;

int32_t strata_concurrency_debug = 0;

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
long strata_thread_id(void) { return syscall(SYS_gettid); }
#else
#include <pthread.h>
long strata_thread_id(void) { return (long)(uintptr_t)pthread_self(); }
#endif

__attribute__((constructor)) static void strata_read_concurrency_debug(void) {
  const char *value = getenv("STRATA_CONCURRENCY_DEBUG");
  strata_concurrency_debug = value != 0 && value[0] != 0 && !(value[0] == '0' && value[1] == 0);
}

#if defined(__linux__) && defined(__GLIBC__)
#include <link.h>
#include <string.h>

typedef struct {
  unsigned long module;
  unsigned long offset;
} strata_tls_index;
extern void *__tls_get_addr(strata_tls_index *index);

struct strata_tls_found {
  size_t module;
  size_t size;
};

static int strata_find_observation(struct dl_phdr_info *info, size_t info_size, void *data) {
  (void)info_size;
  if (info->dlpi_name == 0 || strstr(info->dlpi_name, "libswiftObservation.so") == 0) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type == PT_TLS) {
      ((struct strata_tls_found *)data)->module = info->dlpi_tls_modid;
      ((struct strata_tls_found *)data)->size = info->dlpi_phdr[i].p_memsz;
    }
  }
  return 1;
}

size_t strata_observation_tls_module(size_t *size) {
  struct strata_tls_found found = {0, 0};
  dl_iterate_phdr(strata_find_observation, &found);
  *size = found.size;
  return found.module;
}

void *strata_tls_block(size_t module) {
  strata_tls_index index = {module, 0};
  return __tls_get_addr(&index);
}
#else
size_t strata_observation_tls_module(size_t *size) {
  *size = 0;
  return 0;
}

void *strata_tls_block(size_t module) {
  (void)module;
  return 0;
}
#endif
