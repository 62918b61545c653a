// relay's C ABI (include/relay/c/relay.h): converts arguments and calls the communicator. Every
// rule (sizes, validation, routes, the transport) is the C++ library's; this file only
// translates. Nothing throws across it: every entry point runs inside `guarded`.
#include "relay/c/relay.h"

#include <array>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <unistd.h>

#include "relay/bootstrap/callback_bootstrap.hpp"
#include "relay/bootstrap/tcp_bootstrap.hpp"
#include "relay/comm/collectives.hpp"
#include "relay/comm/split.hpp"
#include "relay/core/wire.hpp"
#include "transport_choice.hpp"
#include "transports.hpp"

// What a bootstrap callback fills: every rank's bytes, or why it failed.
struct relay_bootstrap_result {
  std::vector<std::vector<std::byte>>* all = nullptr;
  std::vector<char> put;
  relay::status failure;
};

// What a handle holds: the communicator, the transport's name, and the last few group lists
// passed, so that a repeated call finds its groups without building (allocating) a list.
struct relay_comm {
  std::unique_ptr<relay::communicator> comm;
  std::string transport;
  std::size_t transport_bytes = 0;  // as created (0: the transport's default), for its splits
  relay::status aborted;            // set by relay_comm_abort: every later call fails with it
  static constexpr std::size_t group_slots = 8;
  std::array<relay::group_list, group_slots> groups;
  std::size_t next_slot = 0;
};

namespace relay::c_abi {

// The header's constants are relay's enumerations, value for value.
static_assert(RELAY_PEER_LOST == static_cast<int>(errc::peer_lost) &&
              RELAY_SYSTEM_ERROR == static_cast<int>(errc::system_error) &&
              RELAY_PEER_ERROR == static_cast<int>(errc::peer_error) &&
              RELAY_MISMATCH == static_cast<int>(errc::mismatch) &&
              RELAY_TIMEOUT == static_cast<int>(errc::timeout) &&
              RELAY_INVALID_BUFFER == static_cast<int>(errc::invalid_buffer) &&
              RELAY_INVALID_ARGUMENT == static_cast<int>(errc::invalid_argument));
static_assert(RELAY_FLOAT64 == static_cast<int>(dtype::float64) &&
              RELAY_BFLOAT16 == static_cast<int>(dtype::bfloat16) &&
              RELAY_INT32 == static_cast<int>(dtype::int32) &&
              static_cast<std::size_t>(RELAY_FLOAT64) + 1 == all_dtypes.size());
static_assert(RELAY_AVG == static_cast<int>(reduce_op::avg));
static_assert(RELAY_ALL_TO_ALL == static_cast<int>(collective::all_to_all) &&
              RELAY_REDUCE_SCATTER == static_cast<int>(collective::reduce_scatter));
static_assert(RELAY_ROUTE_AUTOMATIC == static_cast<int>(route::automatic) &&
              RELAY_ROUTE_PIPELINED == static_cast<int>(route::pipelined));
static_assert(RELAY_WIRE_FP8_E4M3_FNUZ == static_cast<int>(wire_format::fp8_e4m3_fnuz));
static_assert(RELAY_NATIVE_PARTIALS == static_cast<int>(precision::native_partials));
static_assert(RELAY_NO_COLOR == no_color);

namespace {

// ---- errors ------------------------------------------------------------------------------------

thread_local std::string last_error;
thread_local std::int32_t last_peer = -1;

// The first "rank N" or "rank(s) N" of `m`, or -1.
std::int32_t first_rank(std::string_view m) {
  for (std::size_t at = m.find("rank"); at != std::string_view::npos; at = m.find("rank", at + 1)) {
    std::size_t i = at + 4;
    if (m.substr(i, 3) == "(s)") i += 3;
    if (i >= m.size() || m[i] != ' ') continue;
    ++i;
    std::int64_t r = -1;
    while (i < m.size() && m[i] >= '0' && m[i] <= '9' && r < (1 << 24))
      r = (r < 0 ? 0 : r * 10) + (m[i++] - '0');
    if (r >= 0) return static_cast<std::int32_t>(r);
  }
  return -1;
}

// The rank a failure names as its root cause: the status carries it; a bootstrap callback's
// failure, which is text only, names it first (relay.h, relay_bootstrap_fail).
std::int32_t peer_named(const status& s) {
  if (s.peer() >= 0) return s.peer();
  if (s.code() != errc::timeout && s.code() != errc::peer_error && s.code() != errc::mismatch &&
      s.code() != errc::peer_lost)
    return -1;
  return first_rank(s.message());
}

relay_status finish(const status& s) {
  if (s.ok()) return RELAY_OK;
  last_error = s.message();
  last_peer = peer_named(s);
  return static_cast<relay_status>(s.code());
}

template <class F>
relay_status guarded(F&& body) noexcept {
  try {
    return finish(body());
  } catch (const std::bad_alloc&) {
    return finish({errc::out_of_memory, "the host is out of memory"});
  } catch (const std::exception& e) {
    return finish({errc::system_error, std::string("internal error: ") + e.what()});
  } catch (...) {
    return finish({errc::system_error, "internal error: an unknown exception"});
  }
}

status null_argument(const char* what) {
  return {errc::invalid_argument, std::string(what) + " is NULL"};
}

}  // namespace

// ---- communicators ----------------------------------------------------------------------------

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const void*>& registry() {
  static std::unordered_set<const void*> live;
  return live;
}

// Whether `h` is a live handle: the set is looked up, never the pointer read, so a destroyed or
// stray handle is an error, not a crash.
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

// The groups of a call as flat arrays, checked for shape (make_plan checks their ranks).
status check_flat_groups(const std::int32_t* ranks, const std::int32_t* sizes, std::int32_t n,
                         const std::int64_t* counts) {
  if (n <= 0)
    return {errc::invalid_group, "no groups were given (num_groups is " + std::to_string(n) + ")"};
  if (n > (1 << 16))
    return {errc::invalid_group, std::to_string(n) + " groups is more than any node has"};
  if (sizes == nullptr) return null_argument("group_sizes");
  if (ranks == nullptr) return null_argument("group_ranks");
  if (counts == nullptr) return null_argument("counts");
  for (std::int32_t g = 0; g < n; ++g)
    if (sizes[g] <= 0 || sizes[g] > (1 << 16))
      return {errc::invalid_group,
              "group " + std::to_string(g) + " has " + std::to_string(sizes[g]) + " ranks"};
  return {};
}

bool same_groups(const group_list& list, const std::int32_t* ranks, const std::int32_t* sizes,
                 std::int32_t n) {
  if (list.size() != static_cast<std::size_t>(n)) return false;
  std::size_t at = 0;
  for (std::int32_t g = 0; g < n; ++g) {
    const std::vector<int>& group = list[static_cast<std::size_t>(g)];
    if (group.size() != static_cast<std::size_t>(sizes[g])) return false;
    for (int r : group)
      if (r != ranks[at++]) return false;
  }
  return true;
}

void fill_groups(group_list& list, const std::int32_t* ranks, const std::int32_t* sizes,
                 std::int32_t n) {
  list.resize(static_cast<std::size_t>(n));
  std::size_t at = 0;
  for (std::int32_t g = 0; g < n; ++g) {
    std::vector<int>& group = list[static_cast<std::size_t>(g)];
    group.assign(ranks + at, ranks + at + sizes[g]);
    at += static_cast<std::size_t>(sizes[g]);
  }
}

// The handle's list equal to the flat groups, or one filled with them.
const group_list& groups_of(relay_comm& h, const std::int32_t* ranks, const std::int32_t* sizes,
                            std::int32_t n) {
  for (const group_list& list : h.groups)
    if (same_groups(list, ranks, sizes, n)) return list;
  group_list& list = h.groups[h.next_slot];
  h.next_slot = (h.next_slot + 1) % relay_comm::group_slots;
  fill_groups(list, ranks, sizes, n);
  return list;
}

// The C ABI's defaults: the C++ options', but for the route, which is the cost model's choice
// (route::automatic: a group of every rank takes the direct route, small calls the direct
// exchange), as NCCL users expect of a library; C++ callers choose the route they name.
options abi_defaults() {
  options o;
  o.route = route::automatic;
  return o;
}

// `out` from the caller's options; where they ask for a report, `out` writes the library's
// choice to `chosen` and `report` is where it goes.
status read_options(const relay_options* o, std::int32_t groups, options& out, wire_choice& chosen,
                    relay_wire_report*& report) {
  out = abi_defaults();
  report = nullptr;
  if (o == nullptr) return {};
  // An older header's options end before wire_report; any other size was never initialized.
  constexpr std::size_t before_report = offsetof(relay_options, wire_report);
  if (o->struct_size != sizeof(relay_options) && o->struct_size != before_report)
    return {errc::invalid_argument,
            "relay_options.struct_size is " + std::to_string(o->struct_size) + ", not " +
                std::to_string(sizeof(relay_options)) + " (call relay_options_init first)"};
  if (o->mode == RELAY_MODE_FUSED && groups == 1)
    return {errc::invalid_group, "mode fused takes several groups; 1 was given"};
  if (o->mode == RELAY_MODE_SINGLE && groups != 1)
    return {errc::invalid_group,
            "mode single takes exactly one group, not " + std::to_string(groups)};
  if (o->mode < RELAY_MODE_GROUPS || o->mode > RELAY_MODE_SINGLE)
    return {errc::invalid_argument, "mode " + std::to_string(o->mode) + " is not a relay_mode"};
  if (o->route < 0 || o->route > RELAY_ROUTE_AUTOMATIC)
    return {errc::invalid_argument, "route " + std::to_string(o->route) + " is not a relay_route"};
  if (o->wire < 0 || o->wire > RELAY_WIRE_FP8_E4M3_FNUZ)
    return {errc::invalid_argument, "wire " + std::to_string(o->wire) + " is not a relay_wire"};
  if (o->precision < 0 || o->precision > RELAY_NATIVE_PARTIALS)
    return {errc::invalid_argument,
            "precision " + std::to_string(o->precision) + " is not a relay_precision"};
  out.route = static_cast<route>(o->route);
  out.wire = static_cast<wire_format>(o->wire);
  out.precision = static_cast<precision>(o->precision);
  out.permille = o->permille;
  out.tiles = o->tiles;
  out.alignment = o->alignment == 0 ? default_alignment : o->alignment;
  out.wire_threshold = o->wire_threshold;
  if (o->struct_size == sizeof(relay_options) && o->wire_report != nullptr) {
    report = o->wire_report;
    out.wire_report = &chosen;
  }
  return {};
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
  const std::string mine = request + "|" + node_identity();
  std::vector<std::vector<std::byte>> all;
  if (status s = boot.all_gather(std::as_bytes(std::span(mine)), all, timeout); !s) return s;
  auto text = [&](std::size_t r) {
    return std::string(reinterpret_cast<const char*>(all[r].data()), all[r].size());
  };
  const std::string root = text(0);
  const std::string root_request = root.substr(0, root.find('|', root.find('|') + 1));
  const std::string root_node = root.substr(root_request.size());
  bool one_node = true;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const std::string t = text(r);
    const std::string t_request = t.substr(0, t.find('|', t.find('|') + 1));
    if (t_request != root_request)
      return {errc::mismatch, "rank " + std::to_string(r) + " asked for transport " + t_request +
                                  " but rank 0 for " + root_request +
                                  "; every rank passes the same transport and memory"};
    one_node = one_node && t.substr(t_request.size()) == root_node;
  }
  return choose_transport(requested, memory, one_node, compiled_transports(), chosen);
}

status read_memory(std::int32_t memory, memory_kind& out) {
  if (memory != RELAY_MEMORY_HOST && memory != RELAY_MEMORY_DEVICE)
    return {errc::invalid_argument, "memory " + std::to_string(memory) +
                                        " is neither RELAY_MEMORY_HOST nor RELAY_MEMORY_DEVICE"};
  out = memory == RELAY_MEMORY_DEVICE ? memory_kind::device : memory_kind::host;
  return {};
}

// A new handle for `comm`, registered as live, into *out.
void publish(std::unique_ptr<communicator> comm, std::string transport, std::size_t bytes,
             relay_comm** out) {
  auto h = std::make_unique<relay_comm>();
  h->comm = std::move(comm);
  h->transport = std::move(transport);
  h->transport_bytes = bytes;
  {
    const std::lock_guard<std::mutex> lock(registry_mutex());
    registry().insert(h.get());
  }
  *out = h.release();
}

status make_comm(std::shared_ptr<bootstrap> boot, const environment& env, const char* requested,
                 memory_kind memory, std::size_t bytes, relay_comm** out) {
  std::string chosen;
  if (status s = agree_on_transport(*boot, requested == nullptr ? "" : requested, memory,
                                    env.timeout, chosen);
      !s)
    return s;
  std::unique_ptr<transport> link;
  if (status s = make_transport(chosen, *boot, env, bytes, link); !s) return s;
  comm_config config;
  config.device = env.device;
  config.timeout = env.timeout;
  publish(std::make_unique<communicator>(std::move(boot), std::move(link), config), chosen, bytes,
          out);
  return {};
}

// The bootstrap's callbacks as relay::callback_bootstrap takes them.
status from_callback(std::int32_t code, const relay_bootstrap_result& r, const char* what) {
  if (code == RELAY_OK) return {};
  if (!r.failure.ok()) return r.failure;
  return {code > 0 && code <= RELAY_PEER_LOST ? static_cast<errc>(code) : errc::system_error,
          std::string("the ") + what + " callback failed (status " + std::to_string(code) + ")"};
}

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

// The communicator of a live handle, or why not.
status live(relay_comm* c, relay_comm*& out) {
  if (!is_live(c)) return bad_handle(c);
  out = c;
  return out->aborted;
}

// A refusal's status from the C ABI's code and text: a failing relay_status, or why not.
status refusal_of(std::int32_t why, const char* message, const char* otherwise, status& out) {
  if (why <= RELAY_OK || why > RELAY_PEER_LOST)
    return {errc::invalid_argument,
            "a refusal needs a failing relay_status, not " + std::to_string(why)};
  out = {static_cast<errc>(why), message != nullptr && *message != '\0' ? message : otherwise};
  return {};
}

// What this rank alone finds wrong with a call's flat arguments, before they can be read as a
// call: ok, or the refusal its peers learn of through the call's agreement.
status check_call(const std::int32_t* ranks, const std::int32_t* sizes, std::int32_t n,
                  const std::int64_t* counts, std::int32_t type, std::int32_t op,
                  const relay_options* o, options& opt, wire_choice& chosen,
                  relay_wire_report*& report) {
  if (status s = check_flat_groups(ranks, sizes, n, counts); !s) return s;
  if (type < 0 || static_cast<std::size_t>(type) >= all_dtypes.size())
    return {errc::unsupported, "dtype " + std::to_string(type) + " is not a relay_dtype"};
  if (op != RELAY_SUM && op != RELAY_AVG)
    return {errc::unsupported, "op " + std::to_string(op) + " is not a relay_op (sum or avg)"};
  return read_options(o, n, opt, chosen, report);
}

status run_call(relay_comm* c, collective coll, const void* send, std::size_t send_bytes,
                void* recv, std::size_t recv_bytes, const std::int32_t* ranks,
                const std::int32_t* sizes, std::int32_t n, const std::int64_t* counts,
                std::int32_t type, std::int32_t op, const relay_options* o, void* stream) {
  relay_comm* h = nullptr;
  if (status s = live(c, h); !s) return s;
  // Refused through the library, so the peers fail at once naming this rank instead of waiting.
  options opt;
  wire_choice chosen;
  relay_wire_report* report = nullptr;
  if (status s = check_call(ranks, sizes, n, counts, type, op, o, opt, chosen, report); !s)
    return h->comm->refuse(std::move(s), stream);
  status s = run_collective(*h->comm, coll, groups_of(*h, ranks, sizes, n),
                            {const_cast<void*>(send), send == nullptr ? 0 : send_bytes},
                            {recv, recv == nullptr ? 0 : recv_bytes},
                            std::span<const std::int64_t>(counts, static_cast<std::size_t>(n)),
                            static_cast<dtype>(type), static_cast<reduce_op>(op), opt, stream);
  if (s && report != nullptr)
    *report = {static_cast<std::int32_t>(chosen.requested), static_cast<std::int32_t>(chosen.taken),
               chosen.bytes, chosen.threshold_bytes};
  return s;
}

// Static, NUL-terminated names per vocabulary (string_views over literals).
constexpr std::array<std::string_view, 10> dtype_names{"int8",    "uint8",  "int32",   "uint32",
                                                       "int64",   "uint64", "float16", "bfloat16",
                                                       "float32", "float64"};
constexpr std::array<std::string_view, 2> op_names{"sum", "avg"};
constexpr std::array<std::string_view, 4> collective_names{"allreduce", "reduce-scatter",
                                                           "all-gather", "all-to-all"};
constexpr std::array<std::string_view, 3> mode_names{"groups", "fused", "single"};
constexpr std::array<std::string_view, 5> route_names{"relay", "direct", "legacy", "pipelined",
                                                      "automatic"};
constexpr std::array<std::string_view, 4> wire_names{"native", "fp8", "fp8_e4m3", "fp8_e4m3_fnuz"};
constexpr std::array<std::string_view, 2> precision_names{"fp32_partials", "native_partials"};

std::optional<std::int32_t> parse_name(std::int32_t vocabulary, std::string_view s) {
  auto as = [](auto v) -> std::optional<std::int32_t> {
    if (!v) return std::nullopt;
    return static_cast<std::int32_t>(*v);
  };
  switch (vocabulary) {
    case RELAY_VOCAB_DTYPE: return as(parse_dtype(s));
    case RELAY_VOCAB_OP: return as(parse_reduce_op(s));
    case RELAY_VOCAB_COLLECTIVE: return as(parse_collective(s));
    case RELAY_VOCAB_MODE:
      if (s == "groups") return RELAY_MODE_GROUPS;
      if (const auto m = parse_mode(s))
        return *m == mode::fused ? RELAY_MODE_FUSED : RELAY_MODE_SINGLE;
      return std::nullopt;
    case RELAY_VOCAB_ROUTE:
      if (s == "automatic" || s == "auto") return RELAY_ROUTE_AUTOMATIC;
      return as(parse_route(s));
    case RELAY_VOCAB_WIRE: return as(parse_wire(s));
    case RELAY_VOCAB_PRECISION: return as(parse_precision(s));
    default: return std::nullopt;
  }
}

const char* vocabulary_name(std::int32_t vocabulary, std::int32_t v) {
  auto at = [v](const auto& names) -> const char* {
    return v >= 0 && static_cast<std::size_t>(v) < names.size()
               ? names[static_cast<std::size_t>(v)].data()
               : nullptr;
  };
  switch (vocabulary) {
    case RELAY_VOCAB_DTYPE: return at(dtype_names);
    case RELAY_VOCAB_OP: return at(op_names);
    case RELAY_VOCAB_COLLECTIVE: return at(collective_names);
    case RELAY_VOCAB_MODE: return at(mode_names);
    case RELAY_VOCAB_ROUTE: return at(route_names);
    case RELAY_VOCAB_WIRE: return at(wire_names);
    case RELAY_VOCAB_PRECISION: return at(precision_names);
    default: return nullptr;
  }
}

std::string choices(std::int32_t vocabulary) {
  std::string all;
  for (std::int32_t v = 0; const char* n = vocabulary_name(vocabulary, v); ++v)
    all.append(v ? ", " : "").append(n);
  return all;
}

}  // namespace
}  // namespace relay::c_abi

using namespace relay;
using namespace relay::c_abi;

extern "C" {

const char* relay_version(void) {
  return RELAY_C_VERSION;
}
int relay_abi_version(void) {
  return RELAY_C_ABI_VERSION;
}
const char* relay_transports(void) {
  return compiled_transports();
}
const char* relay_last_error(void) {
  return last_error.c_str();
}
int32_t relay_last_error_peer(void) {
  return last_peer;
}
const char* relay_status_name(int32_t s) {
  // relay::name's text is a literal, so its view ends in a NUL.
  return s >= 0 && s <= RELAY_PEER_LOST ? name(static_cast<errc>(s)).data() : "unknown";
}

relay_status relay_parse(int32_t vocabulary, const char* text, int32_t* value) {
  return guarded([&]() -> status {
    if (text == nullptr) return null_argument("the name");
    if (value == nullptr) return null_argument("value");
    if (vocabulary_name(vocabulary, 0) == nullptr)
      return {errc::invalid_argument,
              "vocabulary " + std::to_string(vocabulary) + " is not a relay_vocabulary"};
    const auto v = parse_name(vocabulary, text);
    if (!v)
      return {errc::invalid_argument,
              "'" + std::string(text) + "' is not one of " + choices(vocabulary)};
    *value = *v;
    return {};
  });
}
const char* relay_name(int32_t vocabulary, int32_t value) {
  return vocabulary_name(vocabulary, value);
}
int32_t relay_dtype_size(int32_t type) {
  return type >= 0 && static_cast<std::size_t>(type) < all_dtypes.size()
             ? size_of(static_cast<dtype>(type))
             : 0;
}

relay_status relay_rank_layout_of(int32_t coll, int32_t ranks, const int32_t* group_ranks,
                                  const int32_t* group_sizes, int32_t num_groups,
                                  const int64_t* counts, int32_t rank, relay_rank_layout* out) {
  return guarded([&]() -> status {
    if (out == nullptr) return null_argument("out");
    if (coll < 0 || coll > RELAY_ALL_TO_ALL)
      return {errc::invalid_argument,
              "collective " + std::to_string(coll) + " is not a relay_collective"};
    if (status s = check_flat_groups(group_ranks, group_sizes, num_groups, counts); !s) return s;
    if (rank < 0 || rank >= ranks)
      return {errc::invalid_argument,
              "rank " + std::to_string(rank) + " is outside 0.." + std::to_string(ranks - 1)};
    group_list groups;
    fill_groups(groups, group_ranks, group_sizes, num_groups);
    const auto c = static_cast<collective>(coll);
    const std::span<const std::int64_t> n(counts, static_cast<std::size_t>(num_groups));
    // The call's own checks, on arguments every rank passes alike, on the direct route: it exists
    // for every shape the others do, and the sizes do not depend on the route. A route's own
    // limits (a relay needs a helper: A < N) are the call's to report, on every rank alike.
    const plan_request request =
        call_request(c, groups, ranks, n, dtype::float32, reduce_op::sum, options{});
    if (status s = validate_shape(request, call_choice{route::direct, 0, 0, {}}); !s) return s;
    relay_rank_layout l{};
    l.group = -1;
    l.active_index = -1;
    l.active = static_cast<std::int32_t>(groups.front().size());
    l.has_in_place = has_in_place(c) ? 1 : 0;
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (std::size_t k = 0; k < groups[g].size(); ++k)
        if (groups[g][k] == rank) {
          l.group = static_cast<std::int32_t>(g);
          l.active_index = static_cast<std::int32_t>(k);
          l.input_elements = input_elements(c, l.active, n[g]);
          l.output_elements = output_elements(c, l.active, n[g]);
          const in_place_offsets at = in_place_layout(c, l.active_index, n[g]);
          l.in_place_input_offset = at.input;
          l.in_place_output_offset = at.output;
        }
    *out = l;
    return {};
  });
}

relay_status relay_count_of(int32_t coll, int32_t active, int64_t in, int64_t out_elements,
                            int64_t* count) {
  return guarded([&]() -> status {
    if (count == nullptr) return null_argument("count");
    if (coll < 0 || coll > RELAY_ALL_TO_ALL)
      return {errc::invalid_argument,
              "collective " + std::to_string(coll) + " is not a relay_collective"};
    if (active < 1)
      return {errc::invalid_group, "a group of " + std::to_string(active) + " active ranks"};
    if (in < 0 || out_elements < 0)
      return {errc::invalid_count, "element counts cannot be negative"};
    const auto c = static_cast<collective>(coll);
    // The count whose buffers these are: the one rule, inverted, and checked both ways.
    const std::int64_t n = c == collective::allreduce        ? in
                           : c == collective::reduce_scatter ? out_elements
                           : c == collective::all_gather     ? in
                                                             : in / active;
    if (input_elements(c, active, n) != in || output_elements(c, active, n) != out_elements)
      return {errc::invalid_count, std::string(name(c)) + " among " + std::to_string(active) +
                                       " active ranks takes an input of " +
                                       std::to_string(input_elements(c, active, n)) +
                                       " and an output of " +
                                       std::to_string(output_elements(c, active, n)) +
                                       " elements for count " + std::to_string(n) + ", not " +
                                       std::to_string(in) + " and " + std::to_string(out_elements)};
    *count = n;
    return {};
  });
}

relay_status relay_bootstrap_put(relay_bootstrap_result* r, int32_t rank, const void* data,
                                 size_t bytes) {
  return guarded([&]() -> status {
    if (r == nullptr || r->all == nullptr) return null_argument("the result");
    if (rank < 0 || static_cast<std::size_t>(rank) >= r->all->size())
      return {errc::invalid_argument, "rank " + std::to_string(rank) + " is outside 0.." +
                                          std::to_string(r->all->size() - 1)};
    if (data == nullptr && bytes > 0) return null_argument("data");
    const auto* p = static_cast<const std::byte*>(data);
    (*r->all)[static_cast<std::size_t>(rank)].assign(p, p + bytes);
    r->put[static_cast<std::size_t>(rank)] = 1;
    return {};
  });
}

relay_status relay_bootstrap_fail(relay_bootstrap_result* r, int32_t code, const char* message) {
  return guarded([&]() -> status {
    if (r == nullptr) return null_argument("the result");
    const errc e =
        code > 0 && code <= RELAY_PEER_LOST ? static_cast<errc>(code) : errc::system_error;
    r->failure = {
        e, message != nullptr && *message != '\0' ? message : "the bootstrap callback failed"};
    return {};
  });
}

void relay_comm_config_init(relay_comm_config* c) {
  if (c == nullptr) return;
  std::memset(c, 0, sizeof *c);
  c->struct_size = sizeof *c;
  c->memory = RELAY_MEMORY_HOST;
}

relay_status relay_comm_create(const relay_comm_config* cfg, relay_comm** out) {
  return guarded([&]() -> status {
    if (out == nullptr) return null_argument("out");
    *out = nullptr;
    if (cfg == nullptr) return null_argument("config");
    if (cfg->struct_size < sizeof(relay_comm_config))
      return {errc::invalid_argument, "relay_comm_config.struct_size is " +
                                          std::to_string(cfg->struct_size) +
                                          " (call relay_comm_config_init first)"};
    if (cfg->all_gather == nullptr) return null_argument("config.all_gather");
    if (cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size)
      return {errc::invalid_argument, "rank " + std::to_string(cfg->rank) + " of size " +
                                          std::to_string(cfg->size) + " is not a rank"};
    if (cfg->device < 0)
      return {errc::invalid_argument, "device " + std::to_string(cfg->device) + " is negative"};
    memory_kind memory{};
    if (status s = read_memory(cfg->memory, memory); !s) return s;
    environment env;
    env.rank = cfg->rank;
    env.size = cfg->size;
    env.local_rank = cfg->rank;
    env.device = cfg->device;
    if (cfg->timeout_ms > 0)
      env.timeout = std::chrono::milliseconds(cfg->timeout_ms);
    else if (status s = timeout_from_environment(env.timeout); !s)
      return s;
    return make_comm(callback_boot(*cfg), env, cfg->transport, memory,
                     static_cast<std::size_t>(cfg->transport_bytes), out);
  });
}

relay_status relay_comm_create_from_environment(const char* transport, int32_t memory,
                                                relay_comm** out) {
  return guarded([&]() -> status {
    if (out == nullptr) return null_argument("out");
    *out = nullptr;
    memory_kind kind{};
    if (status s = read_memory(memory, kind); !s) return s;
    environment env;
    if (status s = environment_from_process(env); !s) return s;
    std::unique_ptr<bootstrap> boot;
    if (status s = make_tcp_bootstrap(env, boot); !s) return s;
    return make_comm(std::shared_ptr<bootstrap>(std::move(boot)), env, transport, kind, 0, out);
  });
}

relay_status relay_comm_destroy(relay_comm* c) {
  return guarded([&]() -> status {
    if (c == nullptr) return {};
    {
      const std::lock_guard<std::mutex> lock(registry_mutex());
      if (registry().erase(c) == 0) return bad_handle(c);
    }
    delete c;
    return {};
  });
}

relay_status relay_comm_split(relay_comm* parent, int32_t color, int32_t key, relay_comm** out) {
  return guarded([&]() -> status {
    if (out == nullptr) return null_argument("out");
    *out = nullptr;
    relay_comm* h = nullptr;
    if (status s = live(parent, h); !s) return s;
    // The parent's transport, with the parent's data area: every rank of the parent chose it, so
    // the members of each color agree on it without asking.
    const std::string name = h->transport;
    const std::size_t bytes = h->transport_bytes;
    const transport_factory make = [&name, bytes](bootstrap& boot, const environment& env,
                                                  std::unique_ptr<transport>& link) {
      return make_transport(name, boot, env, bytes, link);
    };
    std::unique_ptr<communicator> child;
    if (status s = split_communicator(*h->comm, color, key, make, child); !s) return s;
    if (child) publish(std::move(child), name, bytes, out);  // RELAY_NO_COLOR: *out stays NULL
    return {};
  });
}

relay_status relay_comm_split_refuse(relay_comm* parent, int32_t why, const char* message) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(parent, h); !s) return s;
    status refusal;
    if (status s = refusal_of(why, message, "this rank refused the split", refusal); !s) return s;
    return refuse_split(*h->comm, std::move(refusal));
  });
}

relay_status relay_comm_abort(relay_comm* c) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s && h == nullptr) return s;
    h->comm->abort();
    h->aborted = {errc::invalid_argument, "the communicator was aborted; destroy it"};
    return {};
  });
}

relay_status relay_comm_rank(const relay_comm* c, int32_t* rank) {
  return guarded([&]() -> status {
    if (!is_live(c)) return bad_handle(c);
    if (rank == nullptr) return null_argument("rank");
    *rank = c->comm->rank();
    return {};
  });
}
relay_status relay_comm_size(const relay_comm* c, int32_t* size) {
  return guarded([&]() -> status {
    if (!is_live(c)) return bad_handle(c);
    if (size == nullptr) return null_argument("size");
    *size = c->comm->size();
    return {};
  });
}
relay_status relay_comm_device(const relay_comm* c, int32_t* device) {
  return guarded([&]() -> status {
    if (!is_live(c)) return bad_handle(c);
    if (device == nullptr) return null_argument("device");
    *device = c->comm->device();
    return {};
  });
}
relay_status relay_comm_transport(const relay_comm* c, const char** name) {
  return guarded([&]() -> status {
    if (!is_live(c)) return bad_handle(c);
    if (name == nullptr) return null_argument("name");
    *name = c->transport.c_str();
    return {};
  });
}

relay_status relay_comm_async_status(relay_comm* c) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    return h->comm->async_status();
  });
}

relay_status relay_comm_refuse(relay_comm* c, int32_t why, const char* message, void* stream) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    status refusal;
    if (status s = refusal_of(why, message, "this rank refused the call", refusal); !s) return s;
    return h->comm->refuse(std::move(refusal), stream);
  });
}

relay_status relay_comm_register(relay_comm* c, void* data, size_t bytes) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    return h->comm->register_buffer(data, data == nullptr ? 0 : bytes);
  });
}
relay_status relay_comm_deregister(relay_comm* c, void* data) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    return h->comm->deregister_buffer(data);
  });
}
relay_status relay_comm_register_graph_inputs(relay_comm* c) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    return h->comm->register_graph_inputs();
  });
}
relay_status relay_comm_deregister_graph_inputs(relay_comm* c) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    return h->comm->deregister_graph_inputs();
  });
}

void relay_options_init(relay_options* o) {
  if (o == nullptr) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  const options defaults = abi_defaults();
  o->mode = RELAY_MODE_GROUPS;
  o->route = static_cast<std::int32_t>(defaults.route);
  o->wire = static_cast<std::int32_t>(defaults.wire);
  o->precision = static_cast<std::int32_t>(defaults.precision);
  o->permille = defaults.permille;
  o->tiles = defaults.tiles;
  o->alignment = defaults.alignment;
  o->wire_threshold = defaults.wire_threshold;
  o->wire_report = nullptr;
}

int32_t relay_wire_carries(int32_t wire, int32_t type) {
  if (type < 0 || static_cast<std::size_t>(type) >= all_dtypes.size()) return 0;
  if (wire == RELAY_WIRE_NATIVE) return 1;
  if (wire < 0 || wire > RELAY_WIRE_FP8_E4M3_FNUZ) return 0;
  return fp8_wire_dtype(static_cast<dtype>(type)) ? 1 : 0;
}

relay_status relay_allreduce(relay_comm* c, const void* send, size_t send_bytes, void* recv,
                             size_t recv_bytes, const int32_t* ranks, const int32_t* sizes,
                             int32_t n, const int64_t* counts, int32_t type, int32_t op,
                             const relay_options* o, void* stream) {
  return guarded([&] {
    return run_call(c, collective::allreduce, send, send_bytes, recv, recv_bytes, ranks, sizes, n,
                    counts, type, op, o, stream);
  });
}
relay_status relay_reduce_scatter(relay_comm* c, const void* send, size_t send_bytes, void* recv,
                                  size_t recv_bytes, const int32_t* ranks, const int32_t* sizes,
                                  int32_t n, const int64_t* counts, int32_t type, int32_t op,
                                  const relay_options* o, void* stream) {
  return guarded([&] {
    return run_call(c, collective::reduce_scatter, send, send_bytes, recv, recv_bytes, ranks, sizes,
                    n, counts, type, op, o, stream);
  });
}
relay_status relay_all_gather(relay_comm* c, const void* send, size_t send_bytes, void* recv,
                              size_t recv_bytes, const int32_t* ranks, const int32_t* sizes,
                              int32_t n, const int64_t* counts, int32_t type,
                              const relay_options* o, void* stream) {
  return guarded([&] {
    return run_call(c, collective::all_gather, send, send_bytes, recv, recv_bytes, ranks, sizes, n,
                    counts, type, RELAY_SUM, o, stream);
  });
}
relay_status relay_all_to_all(relay_comm* c, const void* send, size_t send_bytes, void* recv,
                              size_t recv_bytes, const int32_t* ranks, const int32_t* sizes,
                              int32_t n, const int64_t* counts, int32_t type,
                              const relay_options* o, void* stream) {
  return guarded([&] {
    return run_call(c, collective::all_to_all, send, send_bytes, recv, recv_bytes, ranks, sizes, n,
                    counts, type, RELAY_SUM, o, stream);
  });
}

}  // extern "C"
