// The host build's async calls: it has only the shm transport, which ignores streams and whose
// calls have finished when they return, so the entry points never order a stream (they ask the
// communicator's transport first). These refuse what they would never be asked.
#include "async_calls.hpp"

namespace relay::c_abi {
namespace {

status no_streams() {
  return {errc::unsupported, "this library was built without a stream transport"};
}

}  // namespace

struct async_calls {};

void async_calls_deleter::operator()(async_calls* a) const noexcept {
  delete a;
}

status enqueue_after(async_calls_ptr&, int, void*, void*) {
  return no_streams();
}
status mark_end(async_calls&, std::uint64_t, void*) {
  return no_streams();
}
status order_after(async_calls&, std::uint64_t, void*) {
  return no_streams();
}
status has_finished(async_calls&, std::uint64_t, bool&) {
  return no_streams();
}
status wait_finished(async_calls&, std::uint64_t) {
  return no_streams();
}

}  // namespace relay::c_abi
