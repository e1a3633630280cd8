// The batch formatter's byte copies in one call (src/syslog/copy-plan.ts): a batch of N frames
// copies each event's MSG (and the header it shares with the events before) into the batch's
// buffer; Buffer#copy costs a call into C++ and its checks per copy, ~90 ns for 200 bytes, this
// one memcpy each.
//
//   copyRuns(out, sources, plan, n)   for i < n: out[d, d + b - a) = sources[s][a, b), where
//                                     plan[4i .. 4i + 3] = s, a, b, d (an Int32Array). Every run
//                                     is checked against its source's and out's bounds before any
//                                     byte is copied: a RangeError, and nothing copied, otherwise.
#include "addon.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/** Sources named per call without a heap allocation; more take one. */
#define STACK_SOURCES 32

typedef struct source {
  const unsigned char *data;
  size_t len;
} source;

/** The bytes of a Uint8Array (a Buffer is one), or 0 with a TypeError pending. */
static int bytes_of(napi_env env, napi_value v, const unsigned char **data, size_t *len) {
  napi_typedarray_type type;
  size_t length, offset;
  void *p;
  napi_value ab;
  bool is;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is || napi_get_typedarray_info(env, v, &type, &length, &p, &ab, &offset) != napi_ok || type != napi_uint8_array) {
    napi_throw_type_error(env, NULL, "copyRuns: out and every source must be a Uint8Array");
    return 0;
  }
  *data = (const unsigned char *)p;
  *len = length;
  return 1;
}

static napi_value js_copy_runs(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t n, nsources;
  bool is_array;
  if (argc < 4 || napi_is_array(env, argv[1], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[1], &nsources) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &n) != napi_ok) {
    napi_throw_type_error(env, NULL, "copyRuns(out, sources, plan, n): sources an array, n a count");
    return NULL;
  }
  source stack[STACK_SOURCES];
  napi_value stack_values[STACK_SOURCES];
  source *src = nsources <= STACK_SOURCES ? stack : malloc(sizeof(source) * nsources);
  napi_value *values = nsources <= STACK_SOURCES ? stack_values : malloc(sizeof(napi_value) * nsources);
  napi_value result = NULL;
  if (src == NULL || values == NULL) {
    napi_throw_error(env, "ENOMEM", "copyRuns: out of memory");
    goto done;
  }
  /* The sources' values first: getting an element may run JavaScript (a getter), which could
     detach or shrink a buffer. Nothing after this runs any, so the pointers taken next stay valid. */
  for (uint32_t i = 0; i < nsources; i++) {
    if (napi_get_element(env, argv[1], i, &values[i]) != napi_ok) goto done;
  }
  const unsigned char *out_c;
  size_t out_len;
  if (!bytes_of(env, argv[0], &out_c, &out_len)) goto done;
  unsigned char *out = (unsigned char *)out_c;
  napi_typedarray_type type;
  size_t plan_len, offset;
  void *plan_p;
  napi_value ab;
  bool is;
  if (napi_is_typedarray(env, argv[2], &is) != napi_ok || !is || napi_get_typedarray_info(env, argv[2], &type, &plan_len, &plan_p, &ab, &offset) != napi_ok || type != napi_int32_array ||
      (size_t)n * 4 > plan_len) {
    napi_throw_type_error(env, NULL, "copyRuns(out, sources, plan, n): plan an Int32Array of at least 4n");
    goto done;
  }
  const int32_t *plan = (const int32_t *)plan_p;
  for (uint32_t i = 0; i < nsources; i++) {
    if (!bytes_of(env, values[i], &src[i].data, &src[i].len)) goto done;
  }
  /* Checked whole before anything is written. */
  for (uint32_t i = 0; i < n; i++) {
    const int32_t *r = plan + 4 * (size_t)i;
    if (r[0] < 0 || (uint32_t)r[0] >= nsources || r[1] < 0 || r[2] < r[1] || (size_t)r[2] > src[r[0]].len || r[3] < 0 || (size_t)r[3] + (size_t)(r[2] - r[1]) > out_len) {
      napi_throw_range_error(env, NULL, "copyRuns: a run outside its source or out");
      goto done;
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    const int32_t *r = plan + 4 * (size_t)i;
    /* An empty run may have no memory behind it (an empty or detached array): nothing to copy. */
    if (r[2] > r[1]) memcpy(out + r[3], src[r[0]].data + r[1], (size_t)(r[2] - r[1]));
  }
  napi_get_undefined(env, &result);
done:
  if (src != stack) free(src);
  if (values != stack_values) free(values);
  return result;
}

void register_copy(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"copyRuns", NULL, js_copy_runs, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
