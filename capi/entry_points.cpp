// relay's C ABI (include/relay/c/relay.h): every entry point reads its arguments into the C++
// library's types (vocabulary.hpp), finds its handle (handles.hpp) and calls the library. Every
// rule (sizes, validation, routes, the transport) is the library's; these only translate.
// Nothing throws across them: each runs inside `guarded` (errors.hpp).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "callbacks.hpp"
#include "errors.hpp"
#include "handles.hpp"
#include "relay/bootstrap/tcp_bootstrap.hpp"
#include "relay/c/relay.h"
#include "relay/comm/collectives.hpp"
#include "relay/comm/split.hpp"
#include "relay/hosted/hosting.hpp"
#include "relay/plan/rank_layout.hpp"
#include "relay/serve/plans.hpp"
#include "relay/serve/serve.hpp"
#include "transports.hpp"
#include "vocabulary.hpp"

static_assert(RELAY_NO_COLOR == relay::no_color);

namespace relay::c_abi {
namespace {

// One collective call. What this rank alone finds wrong with its flat arguments, before they can
// be read as a call, is refused through the library, so that the peers fail at once naming this
// rank instead of waiting.
status run_call(relay_comm* c, const relay_call* call, void* stream) {
  relay_comm* h = nullptr;
  if (status s = live(c, h); !s) return s;
  collective coll{};
  dtype t{};
  reduce_op r{};
  options opt;
  wire_choice chosen;
  relay_wire_report* report = nullptr;
  status mine = read_call(call, coll);
  if (mine) mine = check_flat_groups(call->group_ranks, call->group_sizes, call->num_groups);
  if (mine && call->counts == nullptr) mine = null_argument("counts");
  if (mine) mine = read_dtype(call->dtype, t);
  if (mine && reduces(coll)) mine = read_op(call->op, r);
  if (mine)
    mine = read_options(call->options, static_cast<std::size_t>(call->num_groups), opt, chosen,
                        report);
  if (!mine) return h->comm->refuse(std::move(mine), stream);
  opt.machine = &h->machine;
  const auto n = static_cast<std::size_t>(call->num_groups);
  status s = run_collective(
      *h->comm, coll, groups_of(*h, call->group_ranks, call->group_sizes, call->num_groups),
      {const_cast<void*>(call->send), call->send == nullptr ? 0 : call->send_bytes},
      {call->recv, call->recv == nullptr ? 0 : call->recv_bytes},
      std::span<const std::int64_t>(call->counts, n), t, r, opt, stream);
  if (s && report != nullptr) *report = wire_report_of(chosen);
  return s;
}

// Whether `h`'s transport runs its calls on streams (ipc, nccl, hosted helpers): its async calls
// are ordered by events. shm ignores streams: its calls have finished when they return.
bool on_streams(const relay_comm& h) {
  return h.transport != "shm";
}

// Whether async call `number` has certainly finished without asking the device: on a transport
// without streams, or older than the last RELAY_ASYNC_DEPTH (relay_run_call_async made sure).
bool retired(const relay_comm& h, std::uint64_t number) {
  return !on_streams(h) || number + RELAY_ASYNC_DEPTH <= h.async_made;
}

status async_call_made(const relay_comm& h, std::uint64_t number) {
  if (number >= 1 && number <= h.async_made) return {};
  return {errc::invalid_argument, "no async call numbered " + std::to_string(number) +
                                      " was made on this communicator (it made " +
                                      std::to_string(h.async_made) + ", numbered from 1)"};
}

// Numbers the async call just enqueued on `op_stream` and marks its end there (a stream
// transport), into `out`.
status number_async_call(relay_comm& h, void* op_stream, relay_async_call& out) {
  const std::uint64_t number = ++h.async_made;
  const bool streams = on_streams(h);
  if (streams)
    if (status s = mark_end(*h.async, number, op_stream); !s) return s;
  out.call = number;
  out.retired = !streams ? number : number > RELAY_ASYNC_DEPTH ? number - RELAY_ASYNC_DEPTH : 0;
  return {};
}

// The four collectives' own functions: their arguments as a relay_call.
relay_call call_of(collective coll, const void* send, std::size_t send_bytes, void* recv,
                   std::size_t recv_bytes, const std::int32_t* ranks, const std::int32_t* sizes,
                   std::int32_t n, const std::int64_t* counts, std::int32_t type, std::int32_t op,
                   const relay_options* o) {
  relay_call call;
  relay_call_init(&call);
  call.collective = static_cast<std::int32_t>(coll);
  call.dtype = type;
  call.op = op;
  call.num_groups = n;
  call.group_ranks = ranks;
  call.group_sizes = sizes;
  call.counts = counts;
  call.send = send;
  call.send_bytes = send_bytes;
  call.recv = recv;
  call.recv_bytes = recv_bytes;
  call.options = o;
  return call;
}

// A plan stream's wait: `ms` (> 0) or the communicator's timeout.
std::chrono::milliseconds wait_of(const communicator& comm, std::int64_t ms) {
  return ms > 0 ? std::chrono::milliseconds(ms) : comm.config().timeout;
}

// What relay_rank_layout_of reads a call into, per thread: reused, so that a repeated layout
// allocates nothing.
struct layout_scratch {
  group_list groups;
  call_shape shape;
};

}  // namespace
}  // namespace relay::c_abi

using namespace relay;
using namespace relay::c_abi;

extern "C" {

// ---- the library ------------------------------------------------------------------------------

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
  return c_abi::last_error();
}
int32_t relay_last_error_peer(void) {
  return c_abi::last_error_peer();
}
const char* relay_status_name(int32_t s) {
  // relay::name's text is a literal, so its view ends in a NUL.
  return s >= 0 && s <= RELAY_PEER_LOST ? name(static_cast<errc>(s)).data() : "unknown";
}

relay_status relay_parse(int32_t vocabulary, const char* text, int32_t* value) {
  return guarded([&]() -> status {
    if (text == nullptr) return null_argument("the name");
    if (value == nullptr) return null_argument("value");
    if (!is_vocabulary(vocabulary))
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
  return name_of(vocabulary, value);
}
int32_t relay_dtype_size(int32_t type) {
  dtype t{};
  return read_dtype(type, t) ? size_of(t) : 0;
}

// ---- sizes ------------------------------------------------------------------------------------

relay_status relay_rank_layout_of(int32_t coll, int32_t ranks, const int32_t* group_ranks,
                                  const int32_t* group_sizes, int32_t num_groups,
                                  const int64_t* counts, int32_t rank, relay_rank_layout* out) {
  return guarded([&]() -> status {
    if (out == nullptr) return null_argument("out");
    collective c{};
    if (status s = read_collective(coll, c); !s) return s;
    if (status s = check_flat_groups(group_ranks, group_sizes, num_groups); !s) return s;
    if (counts == nullptr) return null_argument("counts");
    thread_local layout_scratch scratch;
    fill_groups(scratch.groups, group_ranks, group_sizes, num_groups);
    assign_call(scratch.shape, c, scratch.groups, ranks,
                std::span<const std::int64_t>(counts, static_cast<std::size_t>(num_groups)),
                dtype::float32, reduce_op::sum, call_options{});
    rank_layout l;
    if (status s = rank_layout_of(scratch.shape, rank, l); !s) return s;
    *out = to_c(l);
    return {};
  });
}

relay_status relay_count_of(int32_t coll, int32_t active, int64_t in, int64_t out_elements,
                            int64_t* count) {
  return guarded([&]() -> status {
    if (count == nullptr) return null_argument("count");
    collective c{};
    if (status s = read_collective(coll, c); !s) return s;
    std::int64_t n = 0;
    if (status s = count_of(c, active, in, out_elements, n); !s) return s;
    *count = n;
    return {};
  });
}

// ---- bootstrap callbacks ----------------------------------------------------------------------

relay_status relay_bootstrap_put(relay_bootstrap_result* r, int32_t rank, const void* data,
                                 size_t bytes) {
  return guarded([&] { return put(r, rank, data, bytes); });
}

relay_status relay_bootstrap_fail(relay_bootstrap_result* r, int32_t code, const char* message) {
  return guarded([&] { return fail(r, code, message); });
}

// ---- communicators ----------------------------------------------------------------------------

void relay_comm_config_init(relay_comm_config* c) {
  if (c == nullptr) return;
  std::memset(c, 0, sizeof *c);
  c->struct_size = sizeof *c;
  c->memory = RELAY_MEMORY_HOST;
}

namespace {

// An older header's config ends before helper_devices; any other size was never initialized.
constexpr std::size_t before_helpers = offsetof(relay_comm_config, helper_devices);

// The config's helper devices (docs/hosted-helpers.md) into `out`: its list, read by the rule
// RELAY_HELPER_DEVICES is read by, else (NULL, or an older config) that variable's.
status read_helper_devices(const relay_comm_config& cfg, std::vector<int>& out) {
  if (cfg.struct_size == before_helpers || cfg.helper_devices == nullptr)
    return helper_devices_from_environment(out);
  if (cfg.num_helper_devices < 0)
    return {errc::invalid_argument, "relay_comm_config.num_helper_devices is " +
                                        std::to_string(cfg.num_helper_devices) + ", not a count"};
  const std::vector<int> named(cfg.helper_devices, cfg.helper_devices + cfg.num_helper_devices);
  out.clear();
  if (named.empty()) return {};  // no helper, whatever the environment says
  return parse_helper_devices(devices_text(named), out, "relay_comm_config.helper_devices");
}

}  // namespace

relay_status relay_comm_create(const relay_comm_config* cfg, relay_comm** out) {
  return guarded([&]() -> status {
    if (out == nullptr) return null_argument("out");
    *out = nullptr;
    if (cfg == nullptr) return null_argument("config");
    if (cfg->struct_size != sizeof(relay_comm_config) && cfg->struct_size != before_helpers)
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
    std::vector<int> helpers;
    const status read = read_helper_devices(*cfg, helpers);
    return make_comm(callback_boot(*cfg), env, cfg->transport, memory,
                     static_cast<std::size_t>(cfg->transport_bytes), helpers, read, out);
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
    std::vector<int> helpers;
    const status read = helper_devices_from_environment(helpers);
    return make_comm(std::shared_ptr<bootstrap>(std::move(boot)), env, transport, kind, 0, helpers,
                     read, out);
  });
}

relay_status relay_comm_destroy(relay_comm* c) {
  return guarded([&] { return destroy(c); });
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
                                                  std::unique_ptr<transport>& made) {
      return make_transport(name, boot, env, bytes, made);
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
    if (status s = read_refusal(why, message, "this rank refused the split", refusal); !s) return s;
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
    if (status s = read_refusal(why, message, "this rank refused the call", refusal); !s) return s;
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

// ---- serving ranks ----------------------------------------------------------------------------

relay_status relay_comm_attach_plane(relay_comm* c, int32_t role) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    // Any other value goes to the plane as no role, which every rank refuses alike.
    const auto r = role == RELAY_PLANE_CALL || role == RELAY_PLANE_SERVE
                       ? static_cast<serve::plane_role>(role)
                       : serve::plane_role{};
    return serve::attach_plane(*h->comm, r);
  });
}

relay_status relay_comm_serve(relay_comm* c, int64_t timeout_ms, void* stream,
                              uint64_t* calls_served) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (timeout_ms < 0)
      return {errc::invalid_argument,
              "timeout_ms is " + std::to_string(timeout_ms) + " (0: the communicator's)"};
    serve::serve_options opt;
    opt.timeout = std::chrono::milliseconds(timeout_ms);
    opt.stream = stream;
    serve::serve_report report;
    status s = serve::serve(*h->comm, opt, &report);
    if (calls_served != nullptr) *calls_served = report.calls;
    return s;
  });
}

relay_status relay_comm_stop_serving(relay_comm* c) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    return serve::stop_serving(*h->comm);
  });
}

relay_status relay_comm_control_publish(relay_comm* c, uint64_t epoch, const int64_t* counts,
                                        int32_t num_counts, int32_t op_code, int32_t type,
                                        int32_t red_op, int32_t flags, int64_t timeout_ms) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (num_counts < 0)
      return {errc::invalid_argument, "num_counts is " + std::to_string(num_counts)};
    if (num_counts > 0 && counts == nullptr) return null_argument("counts");
    if (op_code < 0 || type < 0 || red_op < 0 || flags < 0)
      return {errc::invalid_argument, "op_code, dtype, red_op and flags are not negative"};
    serve::control_plan p;
    p.op_code = static_cast<std::uint32_t>(op_code);
    p.dtype = static_cast<std::uint32_t>(type);
    p.red_op = static_cast<std::uint32_t>(red_op);
    p.flags = static_cast<std::uint32_t>(flags);
    p.counts.assign(counts, counts + num_counts);
    return serve::publish_control(*h->comm, epoch, p, wait_of(*h->comm, timeout_ms));
  });
}

relay_status relay_comm_control_consume(relay_comm* c, uint64_t epoch, int64_t timeout_ms,
                                        int32_t* op_code, int32_t* type, int32_t* red_op,
                                        int32_t* flags, int64_t* counts, int32_t capacity,
                                        int32_t* num_counts) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (op_code == nullptr || type == nullptr || red_op == nullptr || flags == nullptr)
      return null_argument("op_code, dtype, red_op or flags");
    if (num_counts == nullptr) return null_argument("num_counts");
    if (capacity > 0 && counts == nullptr) return null_argument("counts");
    serve::control_plan p;
    if (status s = serve::consume_control(*h->comm, epoch, p, wait_of(*h->comm, timeout_ms)); !s)
      return s;
    *num_counts = static_cast<int32_t>(p.counts.size());
    if (p.counts.size() > static_cast<std::size_t>(std::max(capacity, 0)))
      return {errc::invalid_argument,
              "epoch " + std::to_string(epoch) + "'s plan has " + std::to_string(p.counts.size()) +
                  " counts; the caller has room for " + std::to_string(capacity)};
    *op_code = static_cast<int32_t>(p.op_code);
    *type = static_cast<int32_t>(p.dtype);
    *red_op = static_cast<int32_t>(p.red_op);
    *flags = static_cast<int32_t>(p.flags);
    std::copy(p.counts.begin(), p.counts.end(), counts);
    return {};
  });
}

relay_status relay_comm_control_limits(relay_comm* c, int32_t* max_calls, int32_t* counts_held) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    serve::plan_stream_limits limits;
    if (status s = serve::plan_limits_of(*h->comm, limits); !s) return s;
    if (max_calls != nullptr) *max_calls = static_cast<int32_t>(limits.control_max_calls);
    if (counts_held != nullptr) *counts_held = static_cast<int32_t>(limits.control_counts_held);
    return {};
  });
}

relay_status relay_comm_control_join(relay_comm* c) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    return serve::join_plan_stream(*h->comm);
  });
}

// ---- the collectives --------------------------------------------------------------------------

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

void relay_call_init(relay_call* call) {
  if (call == nullptr) return;
  std::memset(call, 0, sizeof *call);
  call->struct_size = sizeof *call;
  call->collective = RELAY_ALLREDUCE;
  call->op = RELAY_SUM;
}

relay_status relay_run_call(relay_comm* c, const relay_call* call, void* stream) {
  return guarded([&] { return run_call(c, call, stream); });
}

relay_status relay_run_call_async(relay_comm* c, const relay_call* call, void* stream,
                                  void* op_stream, relay_async_call* out) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (out == nullptr) return h->comm->refuse(null_argument("out"), op_stream);
    if (on_streams(*h))
      if (status s = enqueue_after(h->async, h->comm->device(), stream, op_stream); !s)
        return h->comm->refuse(std::move(s), op_stream);
    if (status s = run_call(c, call, op_stream); !s) return s;
    return number_async_call(*h, op_stream, *out);
  });
}

relay_status relay_comm_mark(relay_comm* c, void* stream, void* op_stream, relay_async_call* out) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (out == nullptr) return null_argument("out");
    if (on_streams(*h))
      if (status s = enqueue_after(h->async, h->comm->device(), stream, op_stream); !s) return s;
    return number_async_call(*h, op_stream, *out);
  });
}

relay_status relay_comm_order_after(relay_comm* c, uint64_t number, void* stream) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (status s = async_call_made(*h, number); !s) return s;
    return retired(*h, number) ? status{} : order_after(*h->async, number, stream);
  });
}

relay_status relay_comm_join_call(relay_comm* c, uint64_t number, void* stream) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (status s = async_call_made(*h, number); !s) return s;
    if (!retired(*h, number))
      if (status s = order_after(*h->async, number, stream); !s) return s;
    return h->comm->async_status();
  });
}

relay_status relay_comm_call_finished(relay_comm* c, uint64_t number, int32_t* finished) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (finished == nullptr) return null_argument("finished");
    if (status s = async_call_made(*h, number); !s) return s;
    bool done = true;
    if (!retired(*h, number))
      if (status s = has_finished(*h->async, number, done); !s) return s;
    *finished = done ? 1 : 0;
    return {};
  });
}

relay_status relay_comm_wait_call(relay_comm* c, uint64_t number) {
  return guarded([&]() -> status {
    relay_comm* h = nullptr;
    if (status s = live(c, h); !s) return s;
    if (status s = async_call_made(*h, number); !s) return s;
    return retired(*h, number) ? status{} : wait_finished(*h->async, number);
  });
}

int32_t relay_wire_carries(int32_t wire, int32_t type) {
  dtype t{};
  if (!read_dtype(type, t)) return 0;
  if (wire == RELAY_WIRE_NATIVE) return 1;
  if (name_of(RELAY_VOCAB_WIRE, wire) == nullptr) return 0;
  return fp8_wire_dtype(t) ? 1 : 0;
}

relay_status relay_allreduce(relay_comm* c, const void* send, size_t send_bytes, void* recv,
                             size_t recv_bytes, const int32_t* ranks, const int32_t* sizes,
                             int32_t n, const int64_t* counts, int32_t type, int32_t op,
                             const relay_options* o, void* stream) {
  const relay_call call = call_of(collective::allreduce, send, send_bytes, recv, recv_bytes, ranks,
                                  sizes, n, counts, type, op, o);
  return guarded([&] { return run_call(c, &call, stream); });
}
relay_status relay_reduce_scatter(relay_comm* c, const void* send, size_t send_bytes, void* recv,
                                  size_t recv_bytes, const int32_t* ranks, const int32_t* sizes,
                                  int32_t n, const int64_t* counts, int32_t type, int32_t op,
                                  const relay_options* o, void* stream) {
  const relay_call call = call_of(collective::reduce_scatter, send, send_bytes, recv, recv_bytes,
                                  ranks, sizes, n, counts, type, op, o);
  return guarded([&] { return run_call(c, &call, stream); });
}
relay_status relay_all_gather(relay_comm* c, const void* send, size_t send_bytes, void* recv,
                              size_t recv_bytes, const int32_t* ranks, const int32_t* sizes,
                              int32_t n, const int64_t* counts, int32_t type,
                              const relay_options* o, void* stream) {
  const relay_call call = call_of(collective::all_gather, send, send_bytes, recv, recv_bytes, ranks,
                                  sizes, n, counts, type, RELAY_SUM, o);
  return guarded([&] { return run_call(c, &call, stream); });
}
relay_status relay_all_to_all(relay_comm* c, const void* send, size_t send_bytes, void* recv,
                              size_t recv_bytes, const int32_t* ranks, const int32_t* sizes,
                              int32_t n, const int64_t* counts, int32_t type,
                              const relay_options* o, void* stream) {
  const relay_call call = call_of(collective::all_to_all, send, send_bytes, recv, recv_bytes, ranks,
                                  sizes, n, counts, type, RELAY_SUM, o);
  return guarded([&] { return run_call(c, &call, stream); });
}

}  // extern "C"
