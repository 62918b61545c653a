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

// values[i] is named names[i], and parse(names[i]) gives values[i] back; `parse` is null where the
// enum has no parse function.
template <class E, class Parse>
constexpr bool named(std::initializer_list<E> values, std::initializer_list<std::string_view> names,
                     Parse parse) {
  if (values.size() != names.size()) return false;
  const std::string_view* text = names.begin();
  for (E e : values) {
    if (name(e) != *text) return false;
    if constexpr (!std::is_same_v<Parse, std::nullptr_t>)
      if (parse(*text) != e) return false;
    ++text;
  }
  return true;
}

using C = collective;
static_assert(named<C>({C::allreduce, C::reduce_scatter, C::all_gather, C::all_to_all},
                       {"allreduce", "reduce-scatter", "all-gather", "all-to-all"},
                       parse_collective));
static_assert(named<mode>({mode::fused, mode::single}, {"fused", "single"}, parse_mode));
using R = route;
static_assert(named<R>({R::relay, R::direct, R::legacy, R::pipelined},
                       {"relay", "direct", "legacy", "pipelined"}, parse_route));
// automatic has a name but is no schedule to ask for.
static_assert(name(route::automatic) == "automatic" && !parse_route("automatic"));
using W = wire_format;
static_assert(named<W>({W::native, W::fp8, W::fp8_e4m3, W::fp8_e4m3_fnuz},
                       {"native", "fp8", "fp8_e4m3", "fp8_e4m3_fnuz"}, parse_wire));
using D = dtype;
static_assert(named<D>({D::int8, D::uint8, D::int32, D::uint32, D::int64, D::uint64, D::float16,
                        D::bfloat16, D::float32, D::float64},
                       {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
                        "bfloat16", "float32", "float64"},
                       parse_dtype));
using E = errc;
static_assert(
    named<E>({E::ok, E::invalid_schedule, E::invalid_group, E::invalid_count, E::invalid_buffer,
              E::invalid_argument, E::unsupported, E::gpu_error, E::out_of_memory, E::timeout,
              E::mismatch, E::peer_error, E::system_error, E::peer_lost},
             {"ok", "invalid schedule", "invalid group", "invalid count", "invalid buffer",
              "invalid argument", "unsupported", "gpu error", "out of memory", "timeout",
              "mismatch", "peer error", "system error", "peer lost"},
             nullptr));

// A byte outside the enum (read from a peer, or corrupt) is named, not read past the table.
static_assert(name(static_cast<collective>(4)) == "?" && name(static_cast<route>(200)) == "?");
static_assert(name(static_cast<wire_format>(4)) == "unknown");
static_assert(name(static_cast<dtype>(10)) == "?" && name(static_cast<errc>(14)) == "?");

// The short names stay beside the table's.
static_assert(parse_wire("fnuz") == wire_format::fp8_e4m3_fnuz && !parse_wire("fp16"));
static_assert(parse_dtype("bf16") == dtype::bfloat16 && !parse_dtype("float8"));
static_assert(!parse_collective("all_reduce") && !parse_mode("parallel"));

}  // namespace
