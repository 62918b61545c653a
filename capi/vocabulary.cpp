#include "vocabulary.hpp"

#include <cstddef>
#include <string>

#include "errors.hpp"
#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/wire.hpp"

namespace relay::c_abi {

// The header's constants are relay's enumerations, value for value (relay_mode aside: its 0,
// RELAY_MODE_GROUPS, is the C ABI's "from the groups"; fused and single follow).
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
static_assert(RELAY_MODE_FUSED == static_cast<int>(mode::fused) + 1 &&
              RELAY_MODE_SINGLE == static_cast<int>(mode::single) + 1);
static_assert(RELAY_ROUTE_AUTOMATIC == static_cast<int>(route::automatic) &&
              RELAY_ROUTE_PIPELINED == static_cast<int>(route::pipelined));
static_assert(RELAY_WIRE_FP8_E4M3_FNUZ == static_cast<int>(wire_format::fp8_e4m3_fnuz));
static_assert(RELAY_NATIVE_PARTIALS == static_cast<int>(precision::native_partials));

namespace {

// A value of an enumeration the library names in `table` (core/names.hpp), or none.
template <class Table>
bool within(const Table& table, std::int32_t v) {
  return v >= 0 && static_cast<std::size_t>(v) < table.names.size();
}
template <class Table>
const char* listed(const Table& table, std::int32_t v) {
  // The tables' names are literals, so their views end in a NUL.
  return within(table, v) ? table.names[static_cast<std::size_t>(v)].data() : nullptr;
}
template <class E>
std::optional<std::int32_t> as_value(std::optional<E> e, std::int32_t offset = 0) {
  if (!e) return std::nullopt;
  return static_cast<std::int32_t>(*e) + offset;
}

status out_of(const char* what, std::int32_t v, const char* type) {
  return {errc::invalid_argument,
          std::string(what) + " " + std::to_string(v) + " is not a " + type};
}

}  // namespace

errc failure_code(std::int32_t code) {
  return code > 0 && code <= RELAY_PEER_LOST ? static_cast<errc>(code) : errc::system_error;
}

options abi_defaults() {
  options o;
  o.route = route::automatic;
  return o;
}

status read_options(const relay_options* o, std::size_t groups, options& out, wire_choice& chosen,
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
  if (o->mode != RELAY_MODE_GROUPS && !within(detail::mode_names, o->mode - 1))
    return out_of("mode", o->mode, "relay_mode");
  if (!within(detail::route_names, o->route)) return out_of("route", o->route, "relay_route");
  if (!within(detail::wire_names, o->wire)) return out_of("wire", o->wire, "relay_wire");
  if (!within(detail::precision_names, o->precision))
    return out_of("precision", o->precision, "relay_precision");
  if (o->mode != RELAY_MODE_GROUPS)
    if (status s = check_named_mode(static_cast<mode>(o->mode - 1), groups); !s) return s;
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

relay_wire_report wire_report_of(const wire_choice& chosen) {
  return {static_cast<std::int32_t>(chosen.requested), static_cast<std::int32_t>(chosen.taken),
          chosen.bytes, chosen.threshold_bytes};
}

status read_collective(std::int32_t value, collective& out) {
  if (!within(detail::collective_names, value))
    return out_of("collective", value, "relay_collective");
  out = static_cast<collective>(value);
  return {};
}

status read_call(const relay_call* call, collective& out) {
  if (call == nullptr) return null_argument("call");
  if (call->struct_size != sizeof(relay_call))
    return {errc::invalid_argument,
            "relay_call.struct_size is " + std::to_string(call->struct_size) + ", not " +
                std::to_string(sizeof(relay_call)) + " (call relay_call_init first)"};
  return read_collective(call->collective, out);
}

// A dtype or operator the collective lacks is errc::unsupported, as the library says of one.
status read_dtype(std::int32_t value, dtype& out) {
  if (!within(detail::dtype_names, value))
    return {errc::unsupported, "dtype " + std::to_string(value) + " is not a relay_dtype"};
  out = static_cast<dtype>(value);
  return {};
}

status read_op(std::int32_t value, reduce_op& out) {
  if (!within(detail::reduce_op_names, value))
    return {errc::unsupported,
            "op " + std::to_string(value) + " is not a relay_op (" + choices(RELAY_VOCAB_OP) + ")"};
  out = static_cast<reduce_op>(value);
  return {};
}

status read_memory(std::int32_t value, memory_kind& out) {
  if (value != RELAY_MEMORY_HOST && value != RELAY_MEMORY_DEVICE)
    return {errc::invalid_argument, "memory " + std::to_string(value) +
                                        " is neither RELAY_MEMORY_HOST nor RELAY_MEMORY_DEVICE"};
  out = value == RELAY_MEMORY_DEVICE ? memory_kind::device : memory_kind::host;
  return {};
}

status read_refusal(std::int32_t why, const char* message, const char* otherwise, status& out) {
  if (why <= RELAY_OK || why > RELAY_PEER_LOST)
    return {errc::invalid_argument,
            "a refusal needs a failing relay_status, not " + std::to_string(why)};
  out = {static_cast<errc>(why), message != nullptr && *message != '\0' ? message : otherwise};
  return {};
}

status check_flat_groups(const std::int32_t* ranks, const std::int32_t* sizes, std::int32_t n) {
  if (n <= 0)
    return {errc::invalid_group, "no groups were given (num_groups is " + std::to_string(n) + ")"};
  if (n > (1 << 16))
    return {errc::invalid_group, std::to_string(n) + " groups is more than any node has"};
  if (sizes == nullptr) return null_argument("group_sizes");
  if (ranks == nullptr) return null_argument("group_ranks");
  for (std::int32_t g = 0; g < n; ++g)
    if (sizes[g] <= 0 || sizes[g] > (1 << 16))
      return {errc::invalid_group,
              "group " + std::to_string(g) + " has " + std::to_string(sizes[g]) + " ranks"};
  return {};
}

void fill_groups(group_list& out, const std::int32_t* ranks, const std::int32_t* sizes,
                 std::int32_t n) {
  out.resize(static_cast<std::size_t>(n));
  std::size_t at = 0;
  for (std::int32_t g = 0; g < n; ++g) {
    std::vector<int>& group = out[static_cast<std::size_t>(g)];
    group.assign(ranks + at, ranks + at + sizes[g]);
    at += static_cast<std::size_t>(sizes[g]);
  }
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

relay_rank_layout to_c(const rank_layout& l) {
  relay_rank_layout c{};
  c.group = l.group;
  c.active_index = l.active_index;
  c.active = l.active;
  c.input_elements = l.input_elements;
  c.output_elements = l.output_elements;
  c.in_place_input_offset = l.in_place_input_offset;
  c.in_place_output_offset = l.in_place_output_offset;
  c.has_in_place = l.has_in_place ? 1 : 0;
  return c;
}

bool is_vocabulary(std::int32_t vocabulary) {
  return name_of(vocabulary, 0) != nullptr;
}

std::optional<std::int32_t> parse_name(std::int32_t vocabulary, std::string_view s) {
  switch (vocabulary) {
    case RELAY_VOCAB_DTYPE: return as_value(parse_dtype(s));
    case RELAY_VOCAB_OP: return as_value(parse_reduce_op(s));
    case RELAY_VOCAB_COLLECTIVE: return as_value(parse_collective(s));
    case RELAY_VOCAB_MODE:
      if (s == name_of(RELAY_VOCAB_MODE, RELAY_MODE_GROUPS)) return RELAY_MODE_GROUPS;
      return as_value(parse_mode(s), 1);
    case RELAY_VOCAB_ROUTE: return as_value(parse_call_route(s));
    case RELAY_VOCAB_WIRE: return as_value(parse_wire(s));
    case RELAY_VOCAB_PRECISION: return as_value(parse_precision(s));
    default: return std::nullopt;
  }
}

const char* name_of(std::int32_t vocabulary, std::int32_t v) {
  switch (vocabulary) {
    case RELAY_VOCAB_DTYPE: return listed(detail::dtype_names, v);
    case RELAY_VOCAB_OP: return listed(detail::reduce_op_names, v);
    case RELAY_VOCAB_COLLECTIVE: return listed(detail::collective_names, v);
    case RELAY_VOCAB_MODE:
      return v == RELAY_MODE_GROUPS ? "groups" : listed(detail::mode_names, v - 1);
    case RELAY_VOCAB_ROUTE: return listed(detail::route_names, v);
    case RELAY_VOCAB_WIRE: return listed(detail::wire_names, v);
    case RELAY_VOCAB_PRECISION: return listed(detail::precision_names, v);
    default: return nullptr;
  }
}

std::string choices(std::int32_t vocabulary) {
  std::string all;
  for (std::int32_t v = 0; const char* n = name_of(vocabulary, v); ++v)
    all.append(v ? ", " : "").append(n);
  return all;
}

}  // namespace relay::c_abi
