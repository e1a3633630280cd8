// The batch formatter's byte copies in one call (src/syslog/copy-plan.ts): a batch of N frames
// copies each event's MSG (and the header it shares with the events before) into the batch's
// buffer; Buffer#copy costs a call into C++ and its checks per copy, ~90 ns for 200 bytes, this
// one memcpy each. The HTTP output's JSON body (src/outputs/http/json-body.ts) measures and
// writes its messages' escapes the same way: a JavaScript loop over every byte cost more than the
// rest of the body.
//
//   copyRuns(out, sources, plan, n[, json])
//                                     for i < n: out[d, d + b - a) = sources[s][a, b), where
//                                     plan[4i .. 4i + 3] = s, a, b, d (an Int32Array). Every run
//                                     is checked against its source's and out's bounds before any
//                                     byte is copied: a RangeError, and nothing copied, otherwise.
//                                     json true: each run is written escaped for a JSON string
//                                     (the HTTP output's body), as long as that makes it.
//   jsonExtras(sources, plan, n, extras)
//                                     for i < n: extras[i] = the bytes that escaping adds.
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
    napi_throw_type_error(env, NULL, "copyRuns, jsonExtras: out and every source must be a Uint8Array");
    return 0;
  }
  *data = (const unsigned char *)p;
  *len = length;
  return 1;
}

/* Bytes a JSON string adds for each byte escaped as JSON.stringify writes it (RFC 8259 §7): '"',
   '\\' and \b \t \n \f \r take 2 bytes, the other controls 6 (\u00xx); every other byte 0. */
static const unsigned char json_extra[256] = {
  [0x00 ... 0x07] = 5, ['\b'] = 1, ['\t'] = 1, ['\n'] = 1, [0x0b] = 5, ['\f'] = 1, ['\r'] = 1, [0x0e ... 0x1f] = 5,
  ['"'] = 1, ['\\'] = 1,
};

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Whether p[0, 8) has a control (below 0x20), a '"' (0x22) or a '\\' (0x5c): the bit tricks find
   whether a word has a byte below a value, or equal to one, without a branch per byte (a space,
   0x20, is in most words of text: it must not make one be read byte by byte). */
static inline int word_needs_escape(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  uint64_t control = (w - ONES * 0x20) & ~w & HIGHS;
  uint64_t q = w ^ (ONES * 0x22);
  uint64_t quote = (q - ONES) & ~q & HIGHS;
  uint64_t b = w ^ (ONES * 0x5c);
  uint64_t backslash = (b - ONES) & ~b & HIGHS;
  return (control | quote | backslash) != 0;
}

/* Extra bytes of p[0, len) escaped: 8 bytes at a time, byte by byte only in a word that needs it. */
static size_t extra_of(const unsigned char *p, size_t len) {
  size_t n = 0, i = 0;
  for (; i + 8 <= len; i += 8) {
    if (!word_needs_escape(p + i)) continue;
    for (size_t j = i; j < i + 8; j++) n += json_extra[p[j]];
  }
  for (; i < len; i++) n += json_extra[p[i]];
  return n;
}

static const char HEX[] = "0123456789abcdef";

/* p[0, len) escaped into o as JSON.stringify writes it; returns the end. */
static unsigned char *escape_into(unsigned char *o, const unsigned char *p, size_t len) {
  size_t run = 0, i = 0;
  while (i < len) {
    /* A word with nothing to escape joins the run whole; one that has something is read byte by
       byte, then the next word is tested. */
    if (i + 8 <= len && !word_needs_escape(p + i)) {
      i += 8;
      continue;
    }
    size_t stop = i + 8 <= len ? i + 8 : len;
    for (; i < stop; i++) {
      unsigned char b = p[i];
      if (json_extra[b] == 0) continue;
      memcpy(o, p + run, i - run);
      o += i - run;
      run = i + 1;
      *o++ = '\\';
      switch (b) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\t': *o++ = 't'; break;
        case '\n': *o++ = 'n'; break;
        case '\f': *o++ = 'f'; break;
        case '\r': *o++ = 'r'; break;
        default:
          *o++ = 'u';
          *o++ = '0';
          *o++ = '0';
          *o++ = (unsigned char)HEX[b >> 4];
          *o++ = (unsigned char)HEX[b & 15];
      }
    }
  }
  memcpy(o, p + run, len - run);
  return o + (len - run);
}

/* Whether [a, a + alen) and [b, b + blen) share a byte. */
static int overlaps(const void *a, size_t alen, const void *b, size_t blen) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

/* A call's sources: their values read first, then their bytes. */
typedef struct sources {
  source stack[STACK_SOURCES];
  napi_value stack_values[STACK_SOURCES];
  source *src;
  napi_value *values;
  uint32_t n;
} sources;

/* Reads the elements of `array` into s (sources_free after, whatever it returns). Before any
   pointer is taken: getting an element may run JavaScript (a getter), which could detach or shrink
   a buffer; nothing after this runs any. 0 with an error pending. */
static int sources_read(napi_env env, napi_value array, sources *s, const char *who) {
  s->src = s->stack;
  s->values = s->stack_values;
  s->n = 0;
  bool is_array;
  uint32_t n;
  if (napi_is_array(env, array, &is_array) != napi_ok || !is_array || napi_get_array_length(env, array, &n) != napi_ok) {
    napi_throw_type_error(env, NULL, who);
    return 0;
  }
  if (n > STACK_SOURCES) {
    s->src = malloc(sizeof(source) * n);
    s->values = malloc(sizeof(napi_value) * n);
    if (s->src == NULL || s->values == NULL) {
      napi_throw_error(env, "ENOMEM", "copyRuns, jsonExtras: out of memory");
      return 0;
    }
  }
  s->n = n;
  for (uint32_t i = 0; i < n; i++) {
    if (napi_get_element(env, array, i, &s->values[i]) != napi_ok) return 0;
  }
  return 1;
}

/* The bytes of every source read (after every other pointer's value is read). */
static int sources_bytes(napi_env env, sources *s) {
  for (uint32_t i = 0; i < s->n; i++) {
    if (!bytes_of(env, s->values[i], &s->src[i].data, &s->src[i].len)) return 0;
  }
  return 1;
}

static void sources_free(sources *s) {
  if (s->src != s->stack) free(s->src);
  if (s->values != s->stack_values) free(s->values);
}

/* The elements of an Int32Array of at least `min` elements, or NULL with a TypeError pending. */
static int32_t *int32s_of(napi_env env, napi_value v, size_t min, const char *who) {
  napi_typedarray_type type;
  size_t len, offset;
  void *p;
  napi_value ab;
  bool is;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is || napi_get_typedarray_info(env, v, &type, &len, &p, &ab, &offset) != napi_ok || type != napi_int32_array || min > len) {
    napi_throw_type_error(env, NULL, who);
    return NULL;
  }
  return (int32_t *)p;
}

/* Whether run r = (s, a, b, ...) names a source and lies inside it. */
static int run_in_source(const int32_t *r, const sources *s) {
  return r[0] >= 0 && (uint32_t)r[0] < s->n && r[1] >= 0 && r[2] >= r[1] && (size_t)r[2] <= s->src[r[0]].len;
}

static napi_value js_copy_runs(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t n;
  bool json = false;
  napi_valuetype json_type = napi_undefined;
  if (argc >= 5 && napi_typeof(env, argv[4], &json_type) == napi_ok && json_type != napi_undefined && napi_get_value_bool(env, argv[4], &json) != napi_ok) {
    napi_throw_type_error(env, NULL, "copyRuns(out, sources, plan, n, json): json a boolean");
    return NULL;
  }
  if (argc < 4 || napi_get_value_uint32(env, argv[3], &n) != napi_ok) {
    napi_throw_type_error(env, NULL, "copyRuns(out, sources, plan, n): n a count");
    return NULL;
  }
  sources s;
  napi_value result = NULL;
  if (!sources_read(env, argv[1], &s, "copyRuns(out, sources, plan, n): sources an array")) goto done;
  const unsigned char *out_c;
  size_t out_len;
  if (!bytes_of(env, argv[0], &out_c, &out_len)) goto done;
  unsigned char *out = (unsigned char *)out_c;
  const int32_t *plan = int32s_of(env, argv[2], (size_t)n * 4, "copyRuns(out, sources, plan, n): plan an Int32Array of at least 4n");
  if (plan == NULL || !sources_bytes(env, &s)) goto done;
  /* out shares no memory with the plan (a write would change runs already checked) nor, escaping,
     with a source (an escape written would make a later run longer than checked). */
  bool shared = overlaps(out, out_len, plan, (size_t)n * 4 * sizeof(int32_t));
  for (uint32_t i = 0; json && !shared && i < s.n; i++) shared = overlaps(out, out_len, s.src[i].data, s.src[i].len);
  if (shared) {
    napi_throw_range_error(env, NULL, "copyRuns: out shares memory with the plan or, escaping, a source");
    goto done;
  }
  /* Checked whole before anything is written. */
  for (uint32_t i = 0; i < n; i++) {
    const int32_t *r = plan + 4 * (size_t)i;
    if (!run_in_source(r, &s) || r[3] < 0 || (size_t)r[3] + (size_t)(r[2] - r[1]) > out_len ||
        (json && r[2] > r[1] && (size_t)r[3] + (size_t)(r[2] - r[1]) + extra_of(s.src[r[0]].data + r[1], (size_t)(r[2] - r[1])) > out_len)) {
      napi_throw_range_error(env, NULL, "copyRuns: a run outside its source or out");
      goto done;
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    const int32_t *r = plan + 4 * (size_t)i;
    /* An empty run may have no memory behind it (an empty or detached array): nothing to copy. */
    if (r[2] <= r[1]) continue;
    if (json) escape_into(out + r[3], s.src[r[0]].data + r[1], (size_t)(r[2] - r[1]));
    else memmove(out + r[3], s.src[r[0]].data + r[1], (size_t)(r[2] - r[1]));
  }
  napi_get_undefined(env, &result);
done:
  sources_free(&s);
  return result;
}

/* jsonExtras(sources, plan, n, extras): for i < n, extras[i] = the bytes escaping adds to
   sources[s][a, b) in a JSON string, where plan[4i .. 4i + 2] = s, a, b (plan[4i + 3] unread).
   Checked against the sources' bounds first. */
static napi_value js_json_extras(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t n;
  if (argc < 4 || napi_get_value_uint32(env, argv[2], &n) != napi_ok) {
    napi_throw_type_error(env, NULL, "jsonExtras(sources, plan, n, extras): n a count");
    return NULL;
  }
  sources s;
  napi_value result = NULL;
  if (!sources_read(env, argv[0], &s, "jsonExtras(sources, plan, n, extras): sources an array")) goto done;
  const int32_t *plan = int32s_of(env, argv[1], (size_t)n * 4, "jsonExtras(sources, plan, n, extras): plan an Int32Array of at least 4n");
  if (plan == NULL) goto done;
  int32_t *extras = int32s_of(env, argv[3], n, "jsonExtras(sources, plan, n, extras): extras an Int32Array of at least n");
  if (extras == NULL || !sources_bytes(env, &s)) goto done;
  /* A write to extras must not change a run still to be read. */
  if (overlaps(extras, (size_t)n * sizeof(int32_t), plan, (size_t)n * 4 * sizeof(int32_t))) {
    napi_throw_range_error(env, NULL, "jsonExtras: extras shares memory with the plan");
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (!run_in_source(plan + 4 * (size_t)i, &s)) {
      napi_throw_range_error(env, NULL, "jsonExtras: a run outside its source");
      goto done;
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    const int32_t *r = plan + 4 * (size_t)i;
    size_t extra = r[2] > r[1] ? extra_of(s.src[r[0]].data + r[1], (size_t)(r[2] - r[1])) : 0;
    /* At most 5 per byte: over an int32 only for a run of 429 MiB, far more than a message. */
    if (extra > INT32_MAX) {
      napi_throw_range_error(env, NULL, "jsonExtras: a run's escapes take more than 2 GiB");
      goto done;
    }
    extras[i] = (int32_t)extra;
  }
  napi_get_undefined(env, &result);
done:
  sources_free(&s);
  return result;
}

void register_copy(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"copyRuns", NULL, js_copy_runs, NULL, NULL, NULL, napi_enumerable, NULL},
    {"jsonExtras", NULL, js_json_extras, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
