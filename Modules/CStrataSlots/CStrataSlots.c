#include "CStrataSlots.h"

_Thread_local int32_t strata_slot_counter = 0;
_Thread_local void *_Nullable strata_slot_collector = 0;
_Thread_local const void *_Nullable strata_running_signals = 0;
_Thread_local int32_t strata_observation_probe_hits = 0;
