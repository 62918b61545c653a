// The C ABI's values as relay's: relay.h's enumerations and structs read into the C++ library's
// types, each checked for range (a value outside its enumeration is an error naming it), and the
// library's names for them. Every rule these values then meet is the library's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "relay/c/relay.h"
#include "relay/core/status.hpp"
#include "relay/plan/call_shape.hpp"
#include "relay/plan/rank_layout.hpp"
#include "transport_choice.hpp"

namespace relay::c_abi {

// A failing relay_status as relay's errc; anything else (a callback's own code) a system error.
errc failure_code(std::int32_t code);

// The C ABI's defaults: the C++ options', but for the route, which is the cost model's choice
// (route::automatic), as NCCL users expect of a library; C++ callers choose the route they name.
options abi_defaults();

// A call's options: `out` from the caller's relay_options (NULL: the defaults) for a call of
// `groups` groups. Where the caller asks for the wire report, out.wire_report points at `chosen`
// and `report` is where relay_wire_report(chosen) goes after the call.
status read_options(const relay_options* o, std::size_t groups, options& out, wire_choice& chosen,
                    relay_wire_report*& report);
relay_wire_report wire_report_of(const wire_choice& chosen);

status read_collective(std::int32_t value, collective& out);
// A relay_call's own fields, before its arguments are read: not NULL, initialized
// (relay_call_init's struct_size), a relay_collective (into `out`).
status read_call(const relay_call* call, collective& out);
status read_dtype(std::int32_t value, dtype& out);
status read_op(std::int32_t value, reduce_op& out);
status read_memory(std::int32_t value, memory_kind& out);
// A refusal's status from the caller's code (a failing relay_status) and text (or `otherwise`).
status read_refusal(std::int32_t why, const char* message, const char* otherwise, status& out);

// A call's groups as flat arrays (each group's ranks in turn, and each group's size), checked
// for shape (make_plan checks their ranks), into `out` (its storage reused).
status check_flat_groups(const std::int32_t* ranks, const std::int32_t* sizes, std::int32_t n);
void fill_groups(group_list& out, const std::int32_t* ranks, const std::int32_t* sizes,
                 std::int32_t n);
bool same_groups(const group_list& list, const std::int32_t* ranks, const std::int32_t* sizes,
                 std::int32_t n);

relay_rank_layout to_c(const rank_layout& l);

// relay_parse and relay_name: the names are the library's (core/), value for value.
bool is_vocabulary(std::int32_t vocabulary);
std::optional<std::int32_t> parse_name(std::int32_t vocabulary, std::string_view name);
const char* name_of(std::int32_t vocabulary, std::int32_t value);
// "int8, uint8, ...": the names of `vocabulary`, for an error.
std::string choices(std::int32_t vocabulary);

}  // namespace relay::c_abi
