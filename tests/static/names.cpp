// The enums' names (core/names.hpp tables), proved by the compiler: this file builds only if each
// holds. Every enumerator is paired with its name by hand, so a table out of step with its enum
// (a name misspelt, swapped or left out) fails here.
#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "relay/core/wire.hpp"

namespace {
using namespace relay;

// Each pair's name, and parse(name) gives the enumerator back; `parse` is null where the enum
// has no parse function.
template <class E, class Parse>
constexpr bool named(std::initializer_list<std::pair<E, std::string_view>> pairs, Parse parse) {
  for (const auto& [e, text] : pairs) {
    if (name(e) != text) return false;
    if constexpr (!std::is_same_v<Parse, std::nullptr_t>)
      if (parse(text) != e) return false;
  }
  return true;
}

static_assert(named<collective>({{collective::allreduce, "allreduce"},
                                 {collective::reduce_scatter, "reduce-scatter"},
                                 {collective::all_gather, "all-gather"},
                                 {collective::all_to_all, "all-to-all"}},
                                parse_collective));
static_assert(named<mode>({{mode::fused, "fused"}, {mode::single, "single"}}, parse_mode));
static_assert(named<route>({{route::relay, "relay"},
                            {route::direct, "direct"},
                            {route::legacy, "legacy"},
                            {route::pipelined, "pipelined"}},
                           parse_route));
// automatic has a name but is no schedule to ask for.
static_assert(name(route::automatic) == "automatic" && !parse_route("automatic"));
static_assert(named<wire_format>({{wire_format::native, "native"},
                                  {wire_format::fp8, "fp8"},
                                  {wire_format::fp8_e4m3, "fp8_e4m3"},
                                  {wire_format::fp8_e4m3_fnuz, "fp8_e4m3_fnuz"}},
                                 parse_wire));
static_assert(named<dtype>({{dtype::int8, "int8"},
                            {dtype::uint8, "uint8"},
                            {dtype::int32, "int32"},
                            {dtype::uint32, "uint32"},
                            {dtype::int64, "int64"},
                            {dtype::uint64, "uint64"},
                            {dtype::float16, "float16"},
                            {dtype::bfloat16, "bfloat16"},
                            {dtype::float32, "float32"},
                            {dtype::float64, "float64"}},
                           parse_dtype));
static_assert(named<errc>({{errc::ok, "ok"},
                           {errc::invalid_schedule, "invalid schedule"},
                           {errc::invalid_group, "invalid group"},
                           {errc::invalid_count, "invalid count"},
                           {errc::invalid_buffer, "invalid buffer"},
                           {errc::invalid_argument, "invalid argument"},
                           {errc::unsupported, "unsupported"},
                           {errc::gpu_error, "gpu error"},
                           {errc::out_of_memory, "out of memory"},
                           {errc::timeout, "timeout"},
                           {errc::mismatch, "mismatch"},
                           {errc::peer_error, "peer error"},
                           {errc::system_error, "system error"}},
                          nullptr));

// A byte outside the enum (read from a peer, or corrupt) is named, not read past the table.
static_assert(name(static_cast<collective>(4)) == "?" && name(static_cast<route>(200)) == "?");
static_assert(name(static_cast<wire_format>(4)) == "unknown");
static_assert(name(static_cast<dtype>(10)) == "?" && name(static_cast<errc>(13)) == "?");

// The short names stay beside the table's.
static_assert(parse_wire("fnuz") == wire_format::fp8_e4m3_fnuz && !parse_wire("fp16"));
static_assert(parse_dtype("bf16") == dtype::bfloat16 && !parse_dtype("float8"));
static_assert(!parse_collective("all_reduce") && !parse_mode("parallel"));

}  // namespace
