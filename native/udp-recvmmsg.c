// Batched UDP receive for the relay's UDP input (Linux): the socket is polled on the calling
// thread's libuv loop and each time it is readable, recvmmsg(2) takes up to BATCH datagrams per
// system call, and JavaScript is called once per batch with the datagrams' bytes back to back in
// one Buffer, their ends, and their senders (an address once per run of datagrams from it). Node's dgram path costs a
// recvmsg, a C++ to JS call, a Buffer and an rinfo object per datagram; this costs them per batch.
//
// Node-API only (ABI-stable: any Node with NAPI 8), built by native/compile.mjs; where it is
// missing or fails to load, the input falls back to dgram (src/inputs/udp/native.ts).
//
// JavaScript API (src/inputs/udp/native.ts):
//   open(address, port, ipv6, reusePort, rcvbuf) -> handle   (throws Error{code, syscall} on failure)
//   info(handle) -> [port, rcvbuf]                          (rcvbuf as the kernel reports it)
//   start(handle, onBatch(buf, ends, from, addrs), onError(code))
//   drain(handle)   read what the socket holds now, synchronously, calling onBatch (for a stop)
//   close(handle)   idempotent; info/start on a closed handle throw, drain does nothing
// registered by addon.c, with process.c's calls, in the one addon (native/build/relay.node).

#define _GNU_SOURCE
#include "addon.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#define BATCH 64
#define SLOT 65536
/** Datagrams handed to JavaScript per call at most (several recvmmsg calls). */
#define PER_CALL 256
/** Senders named per call: one per datagram at most, so it never runs out. */
#define MAX_ADDRS PER_CALL
/** After a failed read (not "nothing to read"), polling pauses this long: an error that persists (ENOMEM) must not spin the loop. */
#define RETRY_MS 100
/** How many of the newest senders a datagram's address is compared with before it gets an entry of its own. */
#define ADDR_LOOKBACK 16

struct receiver;

/** What JavaScript holds (an external): outlives the receiver, so a call after close() finds it closed. */
typedef struct holder {
  struct receiver *r;
} holder;

typedef struct receiver {
  napi_env env;
  holder *holder;
  /** Registered at open: at the thread's teardown (a worker's end) Node waits until the handle is closed. */
  napi_async_cleanup_hook_handle cleanup;
  int fd;
  int polling;
  int closed;
  /** JavaScript callbacks in progress: close() from inside one releases the references after it. */
  int depth;
  uv_poll_t poll;
  uv_timer_t retry;
  /** libuv handles (poll, retry) still to close before the memory can go. */
  int open_handles;
  napi_ref on_batch;
  napi_ref on_error;
  napi_async_context async;
  struct mmsghdr msgs[BATCH];
  struct iovec iov[BATCH];
  struct sockaddr_storage from[BATCH];
  unsigned char *slots; /* BATCH x SLOT */
  /* The batch being gathered for JavaScript. */
  unsigned char *out;
  size_t out_cap;
  size_t out_len;
  uint32_t ends[PER_CALL];
  uint32_t who[PER_CALL];
  unsigned count;
  struct sockaddr_storage addrs[MAX_ADDRS];
  socklen_t addr_lens[MAX_ADDRS];
  unsigned naddrs;
} receiver;

static napi_value throw_errno(napi_env env, const char *syscall, int err) {
  napi_value msg, code, error, sys;
  char text[256];
  snprintf(text, sizeof text, "%s: %s", syscall, strerror(err));
  char name[64];
  uv_err_name_r(-err, name, sizeof name);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &msg);
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &sys);
  napi_create_error(env, code, msg, &error);
  napi_set_named_property(env, error, "syscall", sys);
  napi_throw(env, error);
  return NULL;
}

/**
 * Reads the call's first `n` arguments into argv (missing ones are undefined) and returns the
 * receiver of the handle in argv[0]: NULL with a TypeError pending when it is not a handle, NULL
 * alone when it is closed, or with an Error pending when `open` asks for an open one.
 */
static receiver *receiver_of(napi_env env, napi_callback_info info, size_t n, napi_value *argv, int open) {
  size_t argc = n;
  void *p = NULL;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (napi_get_value_external(env, argv[0], &p) != napi_ok || p == NULL) {
    napi_throw_type_error(env, NULL, "not a UDP receiver");
    return NULL;
  }
  receiver *r = ((holder *)p)->r;
  if (r == NULL && open) napi_throw_error(env, NULL, "UDP receiver closed");
  return r;
}

/**
 * Index of `sa` among the batch's senders, added if it is not among the newest ADDR_LOOKBACK (so a
 * batch from many senders costs no more per datagram; an address listed twice is still right).
 */
static unsigned sender_index(receiver *r, const struct sockaddr_storage *sa, socklen_t len) {
  unsigned stop = r->naddrs > ADDR_LOOKBACK ? r->naddrs - ADDR_LOOKBACK : 0;
  for (unsigned i = r->naddrs; i-- > stop;) {
    if (r->addr_lens[i] == len && memcmp(&r->addrs[i], sa, len) == 0) return i;
  }
  memcpy(&r->addrs[r->naddrs], sa, len);
  r->addr_lens[r->naddrs] = len;
  return r->naddrs++;
}

/** Drops the callbacks' references and async context (once no callback is running). */
static void release_js(receiver *r) {
  if (r->on_batch) napi_delete_reference(r->env, r->on_batch);
  if (r->on_error) napi_delete_reference(r->env, r->on_error);
  if (r->async) napi_async_destroy(r->env, r->async);
  r->on_batch = r->on_error = NULL;
  r->async = NULL;
}

/** Calls `cb` with the callback's async context (or plainly, from inside a JavaScript call). */
static void call_js(receiver *r, napi_ref ref, size_t argc, napi_value *argv, int in_js) {
  napi_env env = r->env;
  napi_value cb, global, result;
  napi_get_reference_value(env, ref, &cb);
  napi_get_global(env, &global);
  r->depth++;
  napi_status s = in_js ? napi_call_function(env, global, cb, argc, argv, &result) : napi_make_callback(env, r->async, global, cb, argc, argv, &result);
  r->depth--;
  if (s == napi_pending_exception && !in_js) {
    napi_value err;
    napi_get_and_clear_last_exception(env, &err);
    napi_fatal_exception(env, err);
  }
  if (r->closed && r->depth == 0) release_js(r);
}

static void reset_batch(receiver *r) {
  r->out_len = 0;
  r->count = 0;
  r->naddrs = 0;
}

/**
 * Reads into the batch until the socket is empty, the batch is full or a read fails. Returns 0, or
 * the errno of a failed read other than EAGAIN and EINTR.
 */
static int gather(receiver *r) {
  while (r->count + BATCH <= PER_CALL) {
    for (int i = 0; i < BATCH; i++) {
      r->msgs[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_storage);
      r->msgs[i].msg_hdr.msg_flags = 0;
      r->msgs[i].msg_len = 0;
    }
    int n = recvmmsg(r->fd, r->msgs, BATCH, MSG_DONTWAIT, NULL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return errno;
    }
    if (n == 0) return 0;
    size_t need = 0;
    for (int i = 0; i < n; i++) need += r->msgs[i].msg_len;
    if (r->out_len + need > r->out_cap) {
      size_t cap = r->out_cap ? r->out_cap : 64 * 1024;
      while (cap < r->out_len + need) cap *= 2;
      unsigned char *grown = realloc(r->out, cap);
      if (grown == NULL) return ENOMEM;
      r->out = grown;
      r->out_cap = cap;
    }
    for (int i = 0; i < n; i++) {
      unsigned who = sender_index(r, &r->from[i], r->msgs[i].msg_hdr.msg_namelen);
      memcpy(r->out + r->out_len, r->slots + (size_t)i * SLOT, r->msgs[i].msg_len);
      r->out_len += r->msgs[i].msg_len;
      r->ends[r->count] = (uint32_t)r->out_len;
      r->who[r->count] = who;
      r->count++;
    }
    if (n < BATCH) return 0;
  }
  return 0;
}

static napi_value address_text(napi_env env, const struct sockaddr_storage *sa) {
  char text[INET6_ADDRSTRLEN] = "";
  if (sa->ss_family == AF_INET) inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, text, sizeof text);
  else if (sa->ss_family == AF_INET6) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, text, sizeof text);
  napi_value v;
  napi_create_string_latin1(env, text, NAPI_AUTO_LENGTH, &v);
  return v;
}

/** Hands the gathered batch to onBatch(buf, ends, from, addrs). */
static void deliver(receiver *r, int in_js) {
  napi_env env = r->env;
  if (r->count == 0 || r->closed) {
    reset_batch(r);
    return;
  }
  napi_value argv[4], ab;
  void *data;
  napi_create_buffer_copy(env, r->out_len, r->out, NULL, &argv[0]);
  napi_create_arraybuffer(env, r->count * 4, &data, &ab);
  memcpy(data, r->ends, r->count * 4);
  napi_create_typedarray(env, napi_uint32_array, r->count, ab, 0, &argv[1]);
  napi_create_arraybuffer(env, r->count * 4, &data, &ab);
  memcpy(data, r->who, r->count * 4);
  napi_create_typedarray(env, napi_uint32_array, r->count, ab, 0, &argv[2]);
  napi_create_array_with_length(env, r->naddrs, &argv[3]);
  for (unsigned i = 0; i < r->naddrs; i++) napi_set_element(env, argv[3], i, address_text(env, &r->addrs[i]));
  reset_batch(r);
  if (r->out_cap > 1024 * 1024) {
    /* A burst of large datagrams grew it: give it back rather than hold it for good. */
    free(r->out);
    r->out = NULL;
    r->out_cap = 0;
  }
  call_js(r, r->on_batch, 4, argv, in_js);
}

static void report_error(receiver *r, int err) {
  napi_value code;
  napi_create_int32(r->env, err, &code);
  call_js(r, r->on_error, 1, &code, 0);
}

static void on_readable(uv_poll_t *handle, int status, int events);

static void on_retry(uv_timer_t *timer) {
  receiver *r = (receiver *)timer->data;
  if (!r->closed) uv_poll_start(&r->poll, UV_READABLE, on_readable);
}

static void on_readable(uv_poll_t *handle, int status, int events) {
  receiver *r = (receiver *)handle->data;
  (void)events;
  if (r->closed) return;
  napi_handle_scope scope;
  napi_open_handle_scope(r->env, &scope);
  int err = status < 0 ? -status : gather(r);
  deliver(r, 0);
  if (err && !r->closed) report_error(r, err);
  if (err && !r->closed) {
    /* Level-triggered: polling on at once would call again at once, and fail again. */
    uv_poll_stop(&r->poll);
    uv_timer_start(&r->retry, on_retry, RETRY_MS, 0);
  }
  napi_close_handle_scope(r->env, scope);
}

/** Frees the receiver, and tells Node its teardown need not wait for it any more. */
static void finish(receiver *r) {
  if (r->cleanup) napi_remove_async_cleanup_hook(r->cleanup);
  free(r->slots);
  free(r->out);
  free(r);
}

static void on_handle_closed(uv_handle_t *handle) {
  receiver *r = (receiver *)handle->data;
  if (--r->open_handles == 0) finish(r);
}

/** Stops polling and closes the socket (once); the memory goes when libuv has closed the handle. */
static void shut(receiver *r) {
  if (r->closed) return;
  r->closed = 1;
  if (r->holder) {
    r->holder->r = NULL;
    r->holder = NULL;
  }
  /* From inside a callback (close() in onBatch): the async context is still in use until it returns. */
  if (r->depth == 0) release_js(r);
  close(r->fd);
  r->fd = -1;
  if (r->polling) {
    r->open_handles = 2;
    uv_poll_stop(&r->poll);
    uv_timer_stop(&r->retry);
    uv_close((uv_handle_t *)&r->poll, on_handle_closed);
    uv_close((uv_handle_t *)&r->retry, on_handle_closed);
  } else {
    finish(r);
  }
}

/** The thread's environment ends (a worker stops or fails) with the receiver open. */
static void on_teardown(napi_async_cleanup_hook_handle handle, void *arg) {
  receiver *r = (receiver *)arg;
  r->cleanup = handle;
  shut(r);
}

/** The handle was collected: a receiver nobody closed is closed now. */
static void on_holder_collected(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  holder *h = (holder *)data;
  if (h->r) {
    receiver *r = h->r;
    r->holder = NULL;
    shut(r);
  }
  free(h);
}

static napi_value js_open(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char address[INET6_ADDRSTRLEN + 1] = "";
  size_t len;
  uint32_t port;
  bool ipv6, reuse;
  int64_t rcvbuf;
  if (argc < 5 || napi_get_value_string_latin1(env, argv[0], address, sizeof address, &len) != napi_ok || napi_get_value_uint32(env, argv[1], &port) != napi_ok ||
      napi_get_value_bool(env, argv[2], &ipv6) != napi_ok || napi_get_value_bool(env, argv[3], &reuse) != napi_ok || napi_get_value_int64(env, argv[4], &rcvbuf) != napi_ok) {
    napi_throw_type_error(env, NULL, "open(address, port, ipv6, reusePort, rcvbuf)");
    return NULL;
  }
  struct sockaddr_storage sa;
  socklen_t salen;
  memset(&sa, 0, sizeof sa);
  if (ipv6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, address, &s6->sin6_addr) != 1) return throw_errno(env, "inet_pton", EINVAL);
    salen = sizeof *s6;
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, address, &s4->sin_addr) != 1) return throw_errno(env, "inet_pton", EINVAL);
    salen = sizeof *s4;
  }
  int fd = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return throw_errno(env, "socket", errno);
  int one = 1;
  if (reuse && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) {
    int e = errno;
    close(fd);
    return throw_errno(env, "setsockopt", e);
  }
  if (rcvbuf > 0) {
    int v = (int)rcvbuf;
    /* As rsyslog's imudp: beyond net.core.rmem_max where the process may (CAP_NET_ADMIN), else
       capped by it. What was granted is reported by info(). */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) < 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
  }
  if (bind(fd, (struct sockaddr *)&sa, salen) < 0) {
    int e = errno;
    close(fd);
    return throw_errno(env, "bind", e);
  }
  receiver *r = calloc(1, sizeof *r);
  unsigned char *slots = malloc((size_t)BATCH * SLOT);
  holder *h = malloc(sizeof *h);
  if (r == NULL || slots == NULL || h == NULL) {
    free(r);
    free(slots);
    free(h);
    close(fd);
    return throw_errno(env, "malloc", ENOMEM);
  }
  h->r = r;
  r->holder = h;
  r->env = env;
  r->fd = fd;
  r->slots = slots;
  for (int i = 0; i < BATCH; i++) {
    r->iov[i].iov_base = slots + (size_t)i * SLOT;
    r->iov[i].iov_len = SLOT;
    r->msgs[i].msg_hdr.msg_iov = &r->iov[i];
    r->msgs[i].msg_hdr.msg_iovlen = 1;
    r->msgs[i].msg_hdr.msg_name = &r->from[i];
  }
  napi_add_async_cleanup_hook(env, on_teardown, r, &r->cleanup);
  napi_value handle;
  napi_create_external(env, h, on_holder_collected, NULL, &handle);
  return handle;
}

static napi_value js_info(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  receiver *r = receiver_of(env, info, 1, argv, 1);
  if (r == NULL) return NULL;
  struct sockaddr_storage sa;
  socklen_t salen = sizeof sa;
  if (getsockname(r->fd, (struct sockaddr *)&sa, &salen) < 0) return throw_errno(env, "getsockname", errno);
  int rcvbuf = 0;
  socklen_t optlen = sizeof rcvbuf;
  getsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &optlen);
  uint16_t port = sa.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port) : ntohs(((struct sockaddr_in *)&sa)->sin_port);
  napi_value out, v;
  napi_create_array_with_length(env, 2, &out);
  napi_create_uint32(env, port, &v);
  napi_set_element(env, out, 0, v);
  napi_create_int32(env, rcvbuf, &v);
  napi_set_element(env, out, 1, v);
  return out;
}

static napi_value js_start(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  receiver *r = receiver_of(env, info, 3, argv, 1);
  if (r == NULL) return NULL;
  if (r->polling) {
    napi_throw_error(env, NULL, "UDP receiver already started");
    return NULL;
  }
  napi_value name;
  napi_create_string_utf8(env, "intake-relay:udp-recvmmsg", NAPI_AUTO_LENGTH, &name);
  napi_create_reference(env, argv[1], 1, &r->on_batch);
  napi_create_reference(env, argv[2], 1, &r->on_error);
  napi_async_init(env, NULL, name, &r->async);
  uv_loop_t *loop;
  napi_get_uv_event_loop(env, &loop);
  int rc = uv_poll_init(loop, &r->poll, r->fd);
  if (rc < 0) return throw_errno(env, "uv_poll_init", -rc);
  uv_timer_init(loop, &r->retry);
  r->poll.data = r;
  r->retry.data = r;
  r->polling = 1;
  rc = uv_poll_start(&r->poll, UV_READABLE, on_readable);
  if (rc < 0) return throw_errno(env, "uv_poll_start", -rc);
  return NULL;
}

static napi_value js_drain(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  receiver *r = receiver_of(env, info, 1, argv, 0);
  if (r == NULL || r->on_batch == NULL) return NULL;
  /* Bounded (65,536 datagrams): a sender that keeps sending cannot hold a stop for long. Each
     batch in its own handle scope, so that what JavaScript is done with can be collected. */
  for (int calls = 0; calls < 256 && !r->closed; calls++) {
    gather(r);
    if (r->count == 0) break;
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    deliver(r, 1);
    napi_close_handle_scope(env, scope);
    bool pending;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) break;
  }
  return NULL;
}

static napi_value js_close(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  receiver *r = receiver_of(env, info, 1, argv, 0);
  if (r != NULL) shut(r);
  return NULL;
}

void register_udp(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"open", NULL, js_open, NULL, NULL, NULL, napi_enumerable, NULL},
    {"info", NULL, js_info, NULL, NULL, NULL, napi_enumerable, NULL},
    {"start", NULL, js_start, NULL, NULL, NULL, napi_enumerable, NULL},
    {"drain", NULL, js_drain, NULL, NULL, NULL, napi_enumerable, NULL},
    {"close", NULL, js_close, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
