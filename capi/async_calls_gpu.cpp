// The GPU builds' async calls: the runtime's ordering events (no timing), made on the
// communicator's device at its first async call and kept until it is destroyed, so a repeated
// call records and waits on events it has (nothing allocated; capturable into a graph).
#include <array>
#include <string>

#include "async_calls.hpp"
#include "relay/c/relay.h"
#include "relay/gpu/runtime.hpp"

namespace relay::c_abi {

struct async_calls {
  gpu::rt::event_t join = nullptr;
  std::array<gpu::rt::event_t, RELAY_ASYNC_DEPTH> ends{};

  gpu::rt::event_t& end_of(std::uint64_t number) { return ends[number % ends.size()]; }
};

namespace {

status failed(const char* what, gpu::rt::error_t e) {
  return {errc::gpu_error, std::string(what) + " failed: " + gpu::rt::error_string(e)};
}

gpu::rt::stream_t stream_of(void* s) {
  return static_cast<gpu::rt::stream_t>(s);
}

// The events, on `device` (the current device is put back after).
status make(int device, async_calls_ptr& out) {
  async_calls_ptr a(new async_calls);
  int current = 0;
  if (auto e = gpu::rt::get_device(&current); e != gpu::rt::success) return failed("get device", e);
  if (auto e = gpu::rt::set_device(device); e != gpu::rt::success) return failed("set device", e);
  gpu::rt::error_t e = gpu::rt::event_create(&a->join);
  for (auto& end : a->ends)
    if (e == gpu::rt::success) e = gpu::rt::event_create(&end);
  (void)gpu::rt::set_device(current);
  if (e != gpu::rt::success) return failed("creating an async call's event", e);
  out = std::move(a);
  return {};
}

}  // namespace

void async_calls_deleter::operator()(async_calls* a) const noexcept {
  if (a == nullptr) return;
  if (a->join != nullptr) (void)gpu::rt::event_destroy(a->join);
  for (auto end : a->ends)
    if (end != nullptr) (void)gpu::rt::event_destroy(end);
  delete a;
}

status enqueue_after(async_calls_ptr& a, int device, void* stream, void* op_stream) {
  if (!a)
    if (status s = make(device, a); !s) return s;
  if (stream == op_stream) return {};
  if (auto e = gpu::rt::event_record(a->join, stream_of(stream)); e != gpu::rt::success)
    return failed("recording the caller's stream", e);
  if (auto e = gpu::rt::stream_wait_event(stream_of(op_stream), a->join); e != gpu::rt::success)
    return failed("ordering the operation stream after the caller's", e);
  return {};
}

status mark_end(async_calls& a, std::uint64_t number, void* op_stream) {
  gpu::rt::event_t& end = a.end_of(number);
  bool capturing = false;
  if (auto e = gpu::rt::is_capturing(stream_of(op_stream), &capturing); e != gpu::rt::success)
    return failed("asking whether the operation stream is captured", e);
  if (number > RELAY_ASYNC_DEPTH && !capturing) {
    // The call `depth` before this one: finished already (the usual case), or waited for. One
    // recorded in a graph capture cannot be asked: its graph's replays end it.
    gpu::rt::error_t e = gpu::rt::event_query(end);
    if (e == gpu::rt::not_ready) e = gpu::rt::event_synchronize(end);
    if (e != gpu::rt::success) {
      (void)gpu::rt::get_last_error();
      if (e != gpu::rt::captured_event) return failed("waiting for an older async call", e);
    }
  }
  if (auto e = gpu::rt::event_record(end, stream_of(op_stream)); e != gpu::rt::success)
    return failed("marking an async call's end", e);
  return {};
}

status order_after(async_calls& a, std::uint64_t number, void* stream) {
  if (auto e = gpu::rt::stream_wait_event(stream_of(stream), a.end_of(number));
      e != gpu::rt::success)
    return failed("ordering a stream after an async call", e);
  return {};
}

status has_finished(async_calls& a, std::uint64_t number, bool& finished) {
  const gpu::rt::error_t e = gpu::rt::event_query(a.end_of(number));
  if (e != gpu::rt::success && e != gpu::rt::not_ready) {
    (void)gpu::rt::get_last_error();
    return failed("asking whether an async call has finished", e);
  }
  finished = e == gpu::rt::success;
  return {};
}

status wait_finished(async_calls& a, std::uint64_t number) {
  if (auto e = gpu::rt::event_synchronize(a.end_of(number)); e != gpu::rt::success)
    return failed("waiting for an async call", e);
  return {};
}

}  // namespace relay::c_abi
