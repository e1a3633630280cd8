// The addon's entry: each concern registers its own calls on the one exports object.
#include "addon.h"

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  register_udp(env, exports);
  register_process(env, exports);
  register_copy(env, exports);
  return exports;
}
