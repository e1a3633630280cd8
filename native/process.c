// The process's own native calls (src/platform/native-addon.ts):
//   trimMemory() -> bool     gives the C library's free memory back to the system (glibc's
//                            malloc_trim: free pages inside its heaps too); false where there is none
//   lockFile(fd) -> 0 | errno  an exclusive flock(2) on an open file, without waiting: 0, or
//                            EWOULDBLOCK when another open file description holds it
//   mallocThresholds(map, trim) -> bool  allocations of `map` bytes or more mapped on their own,
//                            a heap's free top given back past `trim` bytes (M_MMAP_THRESHOLD
//                            and M_TRIM_THRESHOLD, fixed); false where there is no glibc
#define _GNU_SOURCE
#include "addon.h"
#include <errno.h>
#include <sys/file.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

// After a burst, glibc keeps what was freed inside its heaps (holes below the top are never given
// back by free()): tens of MB in a relay at rest. The relay calls this once every output of the
// process is idle (src/runtime/housekeeping.ts).
static napi_value js_trim_memory(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
#ifdef __GLIBC__
  malloc_trim(0);
  napi_get_boolean(env, true, &out);
#else
  napi_get_boolean(env, false, &out);
#endif
  return out;
}

// mallocThresholds(map, trim): the size from which an allocation is mapped on its own
// (M_MMAP_THRESHOLD), and the free top past which a heap gives memory back (M_TRIM_THRESHOLD),
// fixed; glibc otherwise raises both as large blocks are freed (src/platform/native-addon.ts).
static napi_value js_malloc_thresholds(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t n[2] = {0, 0};
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 || napi_get_value_int32(env, argv[0], &n[0]) != napi_ok ||
      napi_get_value_int32(env, argv[1], &n[1]) != napi_ok || n[0] < 1 || n[1] < 1) {
    napi_throw_type_error(env, NULL, "mallocThresholds(mapBytes, trimBytes): two positive numbers");
    return NULL;
  }
  napi_value out;
#ifdef __GLIBC__
  napi_get_boolean(env, mallopt(M_MMAP_THRESHOLD, n[0]) == 1 && mallopt(M_TRIM_THRESHOLD, n[1]) == 1, &out);
#else
  napi_get_boolean(env, false, &out);
#endif
  return out;
}

// The relay's state directories (data_dir, each disk queue) are locked this way: the lock belongs to
// the open file description, so the kernel lets go of it when the process ends, however it ends.
static napi_value js_lock_file(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t fd = -1;
  napi_value out;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok) {
    napi_throw_type_error(env, NULL, "lockFile(fd): fd is a number");
    return NULL;
  }
  int r;
  do r = flock(fd, LOCK_EX | LOCK_NB);
  while (r != 0 && errno == EINTR);
  napi_create_int32(env, r == 0 ? 0 : errno, &out);
  return out;
}

void register_process(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"trimMemory", NULL, js_trim_memory, NULL, NULL, NULL, napi_enumerable, NULL},
    {"lockFile", NULL, js_lock_file, NULL, NULL, NULL, napi_enumerable, NULL},
    {"mallocThresholds", NULL, js_malloc_thresholds, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
