#include "callbacks.hpp"

#include <string>
#include <utility>

#include "errors.hpp"
#include "relay/bootstrap/callback_bootstrap.hpp"
#include "vocabulary.hpp"

namespace relay::c_abi {

namespace {

// A callback's return code as a status: its own failure where it set one.
status from_callback(std::int32_t code, const relay_bootstrap_result& r, const char* what) {
  if (code == RELAY_OK) return {};
  if (!r.failure.ok()) return r.failure;
  return {failure_code(code),
          std::string("the ") + what + " callback failed (status " + std::to_string(code) + ")"};
}

}  // namespace

std::shared_ptr<bootstrap> callback_boot(const relay_comm_config& cfg) {
  const relay_all_gather_fn gather = cfg.all_gather;
  const relay_barrier_fn barrier = cfg.barrier;
  void* user = cfg.user;
  const int size = cfg.size;
  callback_bootstrap::all_gather_fn g = [gather, user, size](
                                            std::span<const std::byte> mine,
                                            std::vector<std::vector<std::byte>>& all,
                                            milliseconds timeout) -> status {
    relay_bootstrap_result r;
    all.assign(static_cast<std::size_t>(size), {});
    r.all = &all;
    r.put.assign(static_cast<std::size_t>(size), 0);
    const std::int32_t code = gather(user, mine.data(), mine.size(), timeout.count(), &r);
    if (status s = from_callback(code, r, "all_gather"); !s) return s;
    for (std::size_t k = 0; k < r.put.size(); ++k)
      if (!r.put[k])
        return {errc::invalid_argument,
                "the all_gather callback returned without the bytes of rank " + std::to_string(k)};
    return {};
  };
  callback_bootstrap::barrier_fn b;
  if (barrier != nullptr)
    b = [barrier, user](milliseconds timeout) -> status {
      relay_bootstrap_result r;
      return from_callback(barrier(user, timeout.count(), &r), r, "barrier");
    };
  return std::make_shared<callback_bootstrap>(cfg.rank, cfg.size, std::move(g), std::move(b));
}

status put(relay_bootstrap_result* r, std::int32_t rank, const void* data, std::size_t bytes) {
  if (r == nullptr || r->all == nullptr) return null_argument("the result");
  if (rank < 0 || static_cast<std::size_t>(rank) >= r->all->size())
    return {errc::invalid_argument, "rank " + std::to_string(rank) + " is outside 0.." +
                                        std::to_string(r->all->size() - 1)};
  if (data == nullptr && bytes > 0) return null_argument("data");
  const auto* p = static_cast<const std::byte*>(data);
  (*r->all)[static_cast<std::size_t>(rank)].assign(p, p + bytes);
  r->put[static_cast<std::size_t>(rank)] = 1;
  return {};
}

status fail(relay_bootstrap_result* r, std::int32_t code, const char* message) {
  if (r == nullptr) return null_argument("the result");
  r->failure = {failure_code(code),
                message != nullptr && *message != '\0' ? message : "the bootstrap callback failed"};
  return {};
}

}  // namespace relay::c_abi
