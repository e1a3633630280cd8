// Batched UDP receive for the relay's UDP input (Linux): recvmmsg(2) takes up to BATCH datagrams
// per system call, and JavaScript is called once per batch with the datagrams' bytes back to back in
// one Buffer, their ends, and their senders (an address once per run of datagrams from it). Node's dgram path costs a
// recvmsg, a C++ to JS call, a Buffer and an rinfo object per datagram; this costs them per batch.
//
// Two ways to read, chosen at start():
// - polled: the socket is polled on the calling thread's libuv loop and read when readable (a UDP
//   receive thread's own loop, which does nothing else);
// - with a reader thread (a backlog bound given): a thread of this addon reads the socket as rsyslog's
//   imudp does, into a backlog of chunks, and wakes the loop, which hands the backlog to JavaScript.
//   While the loop is busy (a collection, a burst of output, a connection being set up) the socket
//   is still drained, so the kernel's buffer need not hold the stall: the backlog holds up to the
//   bound, and what would pass it is dropped and counted. After a datagram finds it idle the reader
//   lets others gather for up to COALESCE_NS (less where the socket's buffer would fill at the
//   last rate), so it and the loop wake ~1,000 times a second at most, not once per datagram.
//
// Node-API only (ABI-stable: any Node with NAPI 8), built by native/compile.mjs; where it is
// missing or fails to load, the input falls back to dgram (src/inputs/udp/native.ts).
//
// JavaScript API (src/inputs/udp/native.ts):
//   open(address, port, ipv6, reusePort, rcvbuf) -> handle   (throws Error{code, syscall} on failure)
//   info(handle) -> [port, rcvbuf]                          (rcvbuf as the kernel reports it)
//   start(handle, onBatch(buf, ends, from, addrs, dropped), onError(code), backlogBytes)
//                   backlogBytes > 0: a reader thread with that bound; 0 or missing: polled
//   drain(handle)   a stop: ends the reader thread, then hands over its backlog and what the
//                   socket holds now, synchronously, calling onBatch
//   close(handle)   idempotent; info/start on a closed handle throw, drain does nothing
// registered by addon.c, with the other concerns' calls, in the one addon (native/build/relay.node).

#define _GNU_SOURCE
#include "addon.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <node_api.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
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
/** The reader thread's backlog is kept in chunks of this size, mapped when needed and unmapped when taken (a stall's backlog goes back to the system). */
#define CHUNK (256 * 1024)
/** Chunks kept mapped for reuse once taken, so that a steady flow maps none. */
#define SPARES 2
/** How long the reader lets datagrams gather after one arrives on an idle socket, at most. */
#define COALESCE_NS 1000000L
/** Bytes of receive buffer a small datagram takes (the kernel counts its buffers, not its bytes): the wait is sized so that the socket is not filled meanwhile. */
#define DATAGRAM_TRUESIZE 2048
/** Datagrams handed to JavaScript per wake of the loop at most: a large backlog is taken over several turns, so that timers and output run between them. */
#define PER_WAKE (16 * PER_CALL)

/** A backlog chunk: records back to back from data[start] (those before are handed over) to data[used]. */
typedef struct chunk {
  struct chunk *next;
  size_t start;
  size_t used;
  unsigned char data[];
} chunk;
#define CHUNK_DATA (CHUNK - offsetof(chunk, data))

/** A datagram in the backlog: this header, then its bytes, the whole padded to 8 bytes. */
typedef struct record {
  uint32_t len;
  uint32_t addr_len;
  union {
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
  } addr;
} record;

static size_t record_size(size_t len) {
  return (sizeof(record) + len + 7) & ~(size_t)7;
}

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
  /** libuv handles (poll and retry, or async) still to close before the memory can go. */
  int open_handles;
  /* With a reader thread (threaded): it reads the socket (msgs, iov, from, slots and fresh are its
     own while it runs) and appends to the backlog; `async` wakes the loop to take it. Under `lock`:
     the backlog's chunks, how many are mapped, what was dropped at its bound, the last failed read,
     the spares. */
  int threaded;
  int reading;
  /** Set (before stop_fd is written) to end the reader, whatever it is doing. */
  int stop;
  /** The loop is handing the backlog over (a drain from inside onBatch must not reorder it). */
  int taking;
  pthread_t thread;
  int stop_fd;
  uv_async_t async;
  pthread_mutex_t lock;
  chunk *head;
  chunk *tail;
  /** Chunks mapped for the backlog (listed, or taken and not yet handed over): CHUNK each, at most backlog_max. */
  size_t chunks;
  size_t backlog_max;
  /** The receive buffer in datagrams it holds at least (sizes the reader's wait). */
  size_t rcv_datagrams;
  uint64_t dropped;
  int read_error;
  chunk *spares[SPARES];
  int nspares;
  /** A chunk the reader mapped outside the lock, for the next append that needs one. */
  chunk *fresh;
  /** Dropped at the bound, taken from the backlog and not yet handed to JavaScript. */
  uint64_t dropped_out;
  napi_ref on_batch;
  napi_ref on_error;
  napi_async_context async_context;
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
static unsigned sender_index(receiver *r, const void *sa, socklen_t len) {
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
  if (r->async_context) napi_async_destroy(r->env, r->async_context);
  r->on_batch = r->on_error = NULL;
  r->async_context = NULL;
}

/** Calls `cb` with the callback's async context (or plainly, from inside a JavaScript call). */
static void call_js(receiver *r, napi_ref ref, size_t argc, napi_value *argv, int in_js) {
  napi_env env = r->env;
  napi_value cb, global, result;
  napi_get_reference_value(env, ref, &cb);
  napi_get_global(env, &global);
  r->depth++;
  napi_status s = in_js ? napi_call_function(env, global, cb, argc, argv, &result) : napi_make_callback(env, r->async_context, global, cb, argc, argv, &result);
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

/** Room in the batch's bytes for `need` more; ENOMEM when there is none to be had. */
static int reserve(receiver *r, size_t need) {
  if (r->out_len + need <= r->out_cap) return 0;
  size_t cap = r->out_cap ? r->out_cap : 64 * 1024;
  while (cap < r->out_len + need) cap *= 2;
  unsigned char *grown = realloc(r->out, cap);
  if (grown == NULL) return ENOMEM;
  r->out = grown;
  r->out_cap = cap;
  return 0;
}

/** Appends one datagram to the batch (room reserved). */
static void add(receiver *r, const void *sa, socklen_t sa_len, const unsigned char *bytes, size_t len) {
  unsigned who = sender_index(r, sa, sa_len);
  memcpy(r->out + r->out_len, bytes, len);
  r->out_len += len;
  r->ends[r->count] = (uint32_t)r->out_len;
  r->who[r->count] = who;
  r->count++;
}

/** Makes the first n of msgs ready for a recvmmsg. */
static void ready_msgs(receiver *r, int n) {
  for (int i = 0; i < n; i++) {
    r->msgs[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_storage);
    r->msgs[i].msg_hdr.msg_flags = 0;
    r->msgs[i].msg_len = 0;
  }
}

/**
 * Reads into the batch until the socket is empty, the batch is full or a read fails. Returns 0, or
 * the errno of a failed read other than EAGAIN and EINTR.
 */
static int gather(receiver *r) {
  while (r->count + BATCH <= PER_CALL) {
    ready_msgs(r, BATCH);
    int n = recvmmsg(r->fd, r->msgs, BATCH, MSG_DONTWAIT, NULL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return errno;
    }
    if (n == 0) return 0;
    size_t need = 0;
    for (int i = 0; i < n; i++) need += r->msgs[i].msg_len;
    if (reserve(r, need)) {
      /* Read, and no memory to hand them over: counted as dropped, not lost unsaid. */
      r->dropped_out += (uint64_t)n;
      return ENOMEM;
    }
    for (int i = 0; i < n; i++) add(r, &r->from[i], r->msgs[i].msg_hdr.msg_namelen, r->slots + (size_t)i * SLOT, r->msgs[i].msg_len);
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

/**
 * Hands the gathered batch to onBatch(buf, ends, from, addrs, dropped), and what was dropped since
 * the last. Where JavaScript cannot be called (an exception pending, the thread terminating), the
 * batch is let go: the caller stops on the pending exception; a terminating thread loses its socket anyway.
 */
static void deliver(receiver *r, int in_js) {
  napi_env env = r->env;
  if ((r->count == 0 && r->dropped_out == 0) || r->closed) {
    reset_batch(r);
    return;
  }
  napi_value argv[5], ab;
  void *ends = NULL, *who = NULL, *none = NULL;
  int ok = (r->out_len > 0 ? napi_create_buffer_copy(env, r->out_len, r->out, NULL, &argv[0]) : napi_create_buffer(env, 0, &none, &argv[0])) == napi_ok &&
           napi_create_arraybuffer(env, r->count * 4, &ends, &ab) == napi_ok && napi_create_typedarray(env, napi_uint32_array, r->count, ab, 0, &argv[1]) == napi_ok &&
           napi_create_arraybuffer(env, r->count * 4, &who, &ab) == napi_ok && napi_create_typedarray(env, napi_uint32_array, r->count, ab, 0, &argv[2]) == napi_ok &&
           napi_create_array_with_length(env, r->naddrs, &argv[3]) == napi_ok && napi_create_double(env, (double)r->dropped_out, &argv[4]) == napi_ok;
  for (unsigned i = 0; ok && i < r->naddrs; i++) ok = napi_set_element(env, argv[3], i, address_text(env, &r->addrs[i])) == napi_ok;
  if (!ok) {
    reset_batch(r);
    return;
  }
  if (r->count > 0) {
    memcpy(ends, r->ends, r->count * 4);
    memcpy(who, r->who, r->count * 4);
  }
  r->dropped_out = 0;
  reset_batch(r);
  if (r->out_cap > 1024 * 1024) {
    /* A burst of large datagrams grew it: give it back rather than hold it for good. */
    free(r->out);
    r->out = NULL;
    r->out_cap = 0;
  }
  call_js(r, r->on_batch, 5, argv, in_js);
}

static void report_error(receiver *r, int err, int in_js) {
  napi_value code;
  if (napi_create_int32(r->env, err, &code) == napi_ok) call_js(r, r->on_error, 1, &code, in_js);
}

/** An exception is pending (thrown by a callback called from JavaScript, or none can be called). */
static int js_failed(napi_env env) {
  bool pending = false;
  return napi_is_exception_pending(env, &pending) != napi_ok || pending;
}

/* ---- The reader thread and its backlog ---- */

static chunk *chunk_map(void) {
  void *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : (chunk *)p;
}

/** The reader's n datagrams just read, appended to the backlog; those past its bound dropped and counted. */
static void append(receiver *r, int n) {
  /* A chunk mapped outside the lock, in case one is needed: the loop never waits on mmap. */
  if (r->fresh == NULL) r->fresh = chunk_map();
  pthread_mutex_lock(&r->lock);
  for (int i = 0; i < n; i++) {
    size_t len = r->msgs[i].msg_len;
    size_t size = record_size(len);
    chunk *c = r->tail;
    if (c == NULL || c->used + size > CHUNK_DATA) {
      c = NULL;
      if ((r->chunks + 1) * CHUNK <= r->backlog_max) {
        if (r->nspares > 0) {
          c = r->spares[--r->nspares];
        } else {
          c = r->fresh;
          r->fresh = NULL;
        }
      }
      if (c == NULL) {
        /* At the bound (or no memory): dropped, and counted. */
        r->dropped++;
        continue;
      }
      r->chunks++;
      c->next = NULL;
      c->start = c->used = 0;
      if (r->tail) r->tail->next = c;
      else r->head = c;
      r->tail = c;
    }
    record *rec = (record *)(c->data + c->used);
    socklen_t alen = r->msgs[i].msg_hdr.msg_namelen;
    rec->len = (uint32_t)len;
    rec->addr_len = alen <= sizeof rec->addr ? alen : 0;
    memcpy(&rec->addr, &r->from[i], rec->addr_len);
    memcpy(rec + 1, r->slots + (size_t)i * SLOT, len);
    c->used += size;
  }
  pthread_mutex_unlock(&r->lock);
}

/** A failed read (ENOMEM, ...): said to the loop, then a pause (or the stop), not a retry in a loop. */
static void read_failed(receiver *r, int err, struct pollfd *stop) {
  pthread_mutex_lock(&r->lock);
  r->read_error = err;
  pthread_mutex_unlock(&r->lock);
  uv_async_send(&r->async);
  poll(stop, 1, RETRY_MS);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int stopping(receiver *r) {
  return __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
}

/**
 * Reads the socket into the backlog until told to stop. When it finds the socket empty it waits
 * for the next datagram, then lets others gather behind it for up to COALESCE_NS, but never longer
 * than a quarter of the receive buffer takes to fill at the rate of the last round.
 */
static void *reader_main(void *arg) {
  receiver *r = (receiver *)arg;
  struct pollfd fds[2] = {{.fd = r->fd, .events = POLLIN}, {.fd = r->stop_fd, .events = POLLIN}};
  int64_t since = now_ns();
  uint64_t got = 0;
  while (!stopping(r)) {
    ready_msgs(r, BATCH);
    int n = recvmmsg(r->fd, r->msgs, BATCH, MSG_DONTWAIT, NULL);
    if (n > 0) {
      append(r, n);
      uv_async_send(&r->async);
      got += (uint64_t)n;
      /* A full batch: the socket likely holds more, read on at once. */
      if (n == BATCH) continue;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      read_failed(r, errno, &fds[1]);
      continue;
    }
    /* Empty: wait for the next datagram or the stop. */
    if (poll(fds, 2, -1) < 0) {
      if (errno != EINTR) read_failed(r, errno, &fds[1]);
      continue;
    }
    if (fds[1].revents) break;
    int64_t now = now_ns();
    int64_t wait = COALESCE_NS;
    if (got > 0) {
      /* At `got` datagrams in `now - since`, a quarter of the buffer fills in this long. */
      double quarter = (double)(now - since) * (double)r->rcv_datagrams / 4.0 / (double)got;
      if (quarter < (double)wait) wait = (int64_t)quarter;
    }
    since = now;
    got = 0;
    if (wait >= 20000) {
      const struct timespec ts = {0, (long)wait};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

/** Tells the reader to stop and waits for it: it looks at the flag before each read, and the poll it may wait in sees stop_fd. */
static void stop_reader(receiver *r) {
  if (!r->reading) return;
  __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
  uint64_t one = 1;
  ssize_t w;
  do w = write(r->stop_fd, &one, sizeof one);
  while (w < 0 && errno == EINTR);
  pthread_join(r->thread, NULL);
  r->reading = 0;
  if (r->fresh) {
    munmap(r->fresh, CHUNK);
    r->fresh = NULL;
  }
}

/** A chunk handed over: kept as a spare, or unmapped (outside the lock). */
static void release_chunk(receiver *r, chunk *c) {
  pthread_mutex_lock(&r->lock);
  r->chunks--;
  int kept = !r->closed && r->nspares < SPARES;
  if (kept) r->spares[r->nspares++] = c;
  pthread_mutex_unlock(&r->lock);
  if (!kept) munmap(c, CHUNK);
}

/** Chunks taken and not handed over (c first, from its start) go back to the front of the backlog. */
static void put_back(receiver *r, chunk *c) {
  chunk *last = c;
  while (last->next) last = last->next;
  pthread_mutex_lock(&r->lock);
  last->next = r->head;
  r->head = c;
  if (r->tail == NULL) r->tail = last;
  pthread_mutex_unlock(&r->lock);
}

/**
 * Hands the backlog to JavaScript in batches of PER_CALL, each in its own handle scope, with what
 * was dropped at the bound, and a failed read to onError. At most PER_WAKE datagrams per call from
 * the loop (`limit`); the rest is put back and the loop woken again. Stops where a callback threw
 * or closed the receiver. The reader may go on appending meanwhile: that comes next time.
 */
static void take_backlog(receiver *r, int in_js, unsigned limit) {
  napi_env env = r->env;
  pthread_mutex_lock(&r->lock);
  chunk *c = r->head;
  r->head = r->tail = NULL;
  r->dropped_out += r->dropped;
  r->dropped = 0;
  int err = r->read_error;
  r->read_error = 0;
  pthread_mutex_unlock(&r->lock);
  r->taking = 1;
  unsigned handed = 0;
  int halted = 0;
  while (c != NULL) {
    while (c->start < c->used) {
      const record *rec = (const record *)(c->data + c->start);
      if (r->count == PER_CALL || (r->out_len > 0 && r->out_len + rec->len > 1024 * 1024)) {
        napi_handle_scope scope;
        napi_open_handle_scope(env, &scope);
        deliver(r, in_js);
        napi_close_handle_scope(env, scope);
        if (r->closed || js_failed(env) || handed >= limit) {
          halted = 1;
          break;
        }
      }
      if (reserve(r, rec->len)) {
        /* No memory for the batch: this datagram is counted as dropped, not lost unsaid. */
        r->dropped_out++;
      } else {
        add(r, &rec->addr, rec->addr_len, (const unsigned char *)(rec + 1), rec->len);
        handed++;
      }
      c->start += record_size(rec->len);
    }
    if (halted) break;
    chunk *next = c->next;
    release_chunk(r, c);
    c = next;
  }
  r->taking = 0;
  if (halted) {
    /* Closed: the rest goes with the receiver. Otherwise it is taken next, first. */
    if (r->closed) {
      while (c != NULL) {
        chunk *next = c->next;
        release_chunk(r, c);
        c = next;
      }
    } else if (c != NULL) {
      put_back(r, c);
      if (!in_js) uv_async_send(&r->async);
    }
  }
  if (r->closed || js_failed(env)) {
    reset_batch(r);
    return;
  }
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  deliver(r, in_js);
  if (err && !r->closed && !js_failed(env)) report_error(r, err, in_js);
  napi_close_handle_scope(env, scope);
}

static void on_backlog(uv_async_t *handle) {
  receiver *r = (receiver *)handle->data;
  if (r->closed) return;
  take_backlog(r, 0, PER_WAKE);
}

/** Unmaps the backlog and the spares (the reader has stopped). */
static void free_backlog(receiver *r) {
  for (chunk *c = r->head, *next; c != NULL; c = next) {
    next = c->next;
    munmap(c, CHUNK);
  }
  r->head = r->tail = NULL;
  r->chunks = 0;
  while (r->nspares > 0) munmap(r->spares[--r->nspares], CHUNK);
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
  if (err && !r->closed) report_error(r, err, 0);
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
  if (r->threaded) {
    free_backlog(r);
    pthread_mutex_destroy(&r->lock);
  }
  if (r->stop_fd >= 0) close(r->stop_fd);
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
  /* The reader first: it reads the socket until it is told to stop. */
  stop_reader(r);
  close(r->fd);
  r->fd = -1;
  if (r->threaded) {
    r->open_handles = 1;
    uv_close((uv_handle_t *)&r->async, on_handle_closed);
  } else if (r->polling) {
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
  r->stop_fd = -1;
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

/**
 * Starts the reader thread (signals blocked in it: they are the main thread's to take). Returns 0,
 * or an errno with the call that failed in *syscall.
 */
static int start_reader(receiver *r, uv_loop_t *loop, size_t backlog_max, const char **syscall) {
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    *syscall = "eventfd";
    return errno;
  }
  int rc = uv_async_init(loop, &r->async, on_backlog);
  if (rc < 0) {
    close(fd);
    *syscall = "uv_async_init";
    return -rc;
  }
  r->async.data = r;
  r->stop_fd = fd;
  r->threaded = 1;
  r->backlog_max = backlog_max;
  int rcvbuf = 0;
  socklen_t optlen = sizeof rcvbuf;
  getsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &optlen);
  r->rcv_datagrams = rcvbuf > DATAGRAM_TRUESIZE ? (size_t)rcvbuf / DATAGRAM_TRUESIZE : 1;
  pthread_mutex_init(&r->lock, NULL);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&r->thread, &attr, reader_main, r);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    *syscall = "pthread_create";
    return rc;
  }
  pthread_setname_np(r->thread, "udp-reader");
  r->reading = 1;
  return 0;
}

static napi_value js_start(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  receiver *r = receiver_of(env, info, 4, argv, 1);
  if (r == NULL) return NULL;
  if (r->polling || r->threaded) {
    napi_throw_error(env, NULL, "UDP receiver already started");
    return NULL;
  }
  int64_t backlog = 0;
  napi_valuetype type;
  napi_typeof(env, argv[3], &type);
  if (type != napi_undefined && (napi_get_value_int64(env, argv[3], &backlog) != napi_ok || backlog < 0)) {
    napi_throw_type_error(env, NULL, "start(handle, onBatch, onError, backlogBytes): backlogBytes is a number of bytes, 0 or more");
    return NULL;
  }
  napi_value name;
  napi_create_string_utf8(env, "intake-relay:udp-recvmmsg", NAPI_AUTO_LENGTH, &name);
  /* A start that failed before left its references: this one replaces them. */
  release_js(r);
  napi_create_reference(env, argv[1], 1, &r->on_batch);
  napi_create_reference(env, argv[2], 1, &r->on_error);
  napi_async_init(env, NULL, name, &r->async_context);
  uv_loop_t *loop;
  napi_get_uv_event_loop(env, &loop);
  if (backlog > 0) {
    const char *syscall = "";
    int err = start_reader(r, loop, (size_t)backlog, &syscall);
    if (err) return throw_errno(env, syscall, err);
    return NULL;
  }
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
  /* The reader stops, and what it read is handed over before what the socket still holds. From
     inside onBatch while the backlog is handed over, only the stop: the handing over goes on. */
  if (r->threaded) {
    stop_reader(r);
    if (r->taking) return NULL;
    take_backlog(r, 1, UINT32_MAX);
    if (js_failed(env)) return NULL;
  }
  /* Bounded (65,536 datagrams): a sender that keeps sending cannot hold a stop for long. Each
     batch in its own handle scope, so that what JavaScript is done with can be collected. */
  for (int calls = 0; calls < 256 && !r->closed; calls++) {
    gather(r);
    if (r->count == 0 && r->dropped_out == 0) break;
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
