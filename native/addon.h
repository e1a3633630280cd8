// The relay's native addon: one shared object (native/build/relay.node), its calls registered by
// concern: the UDP input's batched receive (udp-recvmmsg.c) and the process's own (process.c:
// the C library's free memory, state directory locks) and the batch formatter's copies
// (copy-runs.c). Built by native/compile.mjs.
#ifndef INTAKE_RELAY_ADDON_H
#define INTAKE_RELAY_ADDON_H
#define NAPI_VERSION 8
#include <node_api.h>

void register_udp(napi_env env, napi_value exports);
void register_process(napi_env env, napi_value exports);
void register_copy(napi_env env, napi_value exports);

#endif
