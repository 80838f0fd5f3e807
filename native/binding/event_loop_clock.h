// libuv's uv_now, which Node exports to addons: the event loop's clock in milliseconds,
// which the loop moves forward when it turns. Declared here so the addon builds with
// Node-API's headers alone (node_api.h names the loop type, and napi_get_uv_event_loop
// gives the loop).
#pragma once

#include <cstdint>

struct uv_loop_s;

extern "C" uint64_t uv_now(const struct uv_loop_s* loop);
