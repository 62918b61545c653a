#include "handles.hpp"

#include <fstream>
#include <mutex>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <unistd.h>

#include "errors.hpp"
#include "relay/bootstrap/exchange.hpp"
#include "relay/hosted/communicator.hpp"
#include "transports.hpp"
#include "vocabulary.hpp"

namespace relay::c_abi {

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const void*>& registry() {
  static std::unordered_set<const void*> live;
  return live;
}

// The node this process runs on: the host name and the kernel's boot id (two hosts may share
// a name; two boots of one never share an id).
std::string node_identity() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  std::string id = host.data();
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (boot >> boot_id) id += "/" + boot_id;
  return id;
}

// Every rank's transport request, memory kind and node, all-gathered: every rank checks that
// all asked alike and reaches the same choice from the same bytes.
status agree_on_transport(bootstrap& boot, std::string_view requested, memory_kind memory,
                          std::chrono::milliseconds timeout, std::string& chosen) {
  const std::string request = std::string(requested.empty() ? "auto" : requested) + "|" +
                              (memory == memory_kind::device ? "device" : "host");
  std::vector<std::string> all;
  if (status s = exchange(boot, request + "|" + node_identity(), all, timeout); !s) return s;
  // Each text is "transport|memory|node": the request, then where the rank runs.
  auto request_of = [](std::string_view t) { return t.substr(0, t.find('|', t.find('|') + 1)); };
  const std::string_view root = all[0], root_request = request_of(root);
  bool one_node = true;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const std::string_view t = all[r], t_request = request_of(t);
    if (t_request != root_request)
      return {errc::mismatch, "rank " + std::to_string(r) + " asked for transport " +
                                  std::string(t_request) + " but rank 0 for " +
                                  std::string(root_request) +
                                  "; every rank passes the same transport and memory"};
    one_node = one_node && t.substr(t_request.size()) == root.substr(root_request.size());
  }
  return choose_transport(requested, memory, one_node, compiled_transports(), chosen);
}

}  // namespace

bool is_live(const void* h) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  return h != nullptr && registry().count(h) > 0;
}

status bad_handle(const void* h) {
  return {errc::invalid_argument,
          h == nullptr ? std::string("the communicator is NULL")
                       : "the handle is not a live relay communicator (never created, or "
                         "destroyed)"};
}

status live(relay_comm* c, relay_comm*& out) {
  if (!is_live(c)) return bad_handle(c);
  out = c;
  return out->aborted;
}

void publish(std::unique_ptr<communicator> comm, std::string transport, std::size_t bytes,
             relay_comm** out) {
  auto h = std::make_unique<relay_comm>();
  h->comm = std::move(comm);
  h->transport = std::move(transport);
  h->transport_bytes = bytes;
  if (const std::optional<fp8_format> f = device_fp8(h->comm->device())) h->machine.fp8 = *f;
  {
    const std::lock_guard<std::mutex> lock(registry_mutex());
    registry().insert(h.get());
  }
  *out = h.release();
}

status destroy(relay_comm* c) {
  if (c == nullptr) return {};
  {
    const std::lock_guard<std::mutex> lock(registry_mutex());
    if (registry().erase(c) == 0) return bad_handle(c);
  }
  delete c;
  return {};
}

status make_comm(std::shared_ptr<bootstrap> boot, const environment& env, const char* requested,
                 memory_kind memory, std::size_t bytes, std::span<const int> helpers,
                 const status& refused, relay_comm** out) {
  // Set-up: the transport's choice and creation wait with the set-up timeout, not the calls'
  // (communicator_with_helpers makes the transports so).
  std::string chosen;
  if (status s = agree_on_transport(*boot, requested == nullptr ? "" : requested, memory,
                                    setup_timeout_of(env), chosen);
      !s)
    return s;
  const transport_factory make = [&chosen, bytes](bootstrap& b, const environment& e,
                                                  std::unique_ptr<transport>& made) {
    return make_transport(chosen, b, e, bytes, made);
  };
  std::unique_ptr<communicator> comm;
  if (status s = communicator_with_helpers(std::move(boot), env, helpers, make, comm, refused); !s)
    return s;
  publish(std::move(comm), chosen, bytes, out);
  return {};
}

const group_list& groups_of(relay_comm& h, const std::int32_t* ranks, const std::int32_t* sizes,
                            std::int32_t n) {
  for (const group_list& list : h.groups)
    if (same_groups(list, ranks, sizes, n)) return list;
  group_list& list = h.groups[h.next_slot];
  h.next_slot = (h.next_slot + 1) % relay_comm::group_slots;
  fill_groups(list, ranks, sizes, n);
  return list;
}

}  // namespace relay::c_abi
