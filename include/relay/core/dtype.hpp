// Element types and reduction operators, as run-time values (plans and executors are chosen at
// run time) with a compile-time mapping to C++ types.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "relay/core/half.hpp"
#include "relay/core/names.hpp"

namespace relay {

enum class dtype : unsigned char {
  int8,
  uint8,
  int32,
  uint32,
  int64,
  uint64,
  float16,
  bfloat16,
  float32,
  float64
};
inline constexpr std::array<dtype, 10> all_dtypes{
    dtype::int8,   dtype::uint8,   dtype::int32,    dtype::uint32,  dtype::int64,
    dtype::uint64, dtype::float16, dtype::bfloat16, dtype::float32, dtype::float64};

// sum, or avg: the sum divided once, at the final reduction, by the number of contributions.
enum class reduce_op : unsigned char { sum, avg };

constexpr int size_of(dtype t) {
  switch (t) {
    case dtype::int8:
    case dtype::uint8: return 1;
    case dtype::float16:
    case dtype::bfloat16: return 2;
    case dtype::int32:
    case dtype::uint32:
    case dtype::float32: return 4;
    case dtype::int64:
    case dtype::uint64:
    case dtype::float64: return 8;
  }
  return 0;
}

// How a reduction stores a partial sum that is not final (a helper's sum of some contributions,
// which the owner then adds to): fp32_partials keeps it in the accumulator's width, so fp16 and
// bf16 round once, at the final store; native_partials stores it in the element type (the spec's
// behaviour: half the partial bytes on the wire, one extra rounding; docs/schedules.md has the
// error bound). Types other than fp16/bf16 accumulate in their own width, so both are the same.
enum class precision : unsigned char { fp32_partials, native_partials };

namespace detail {
inline constexpr name_table<precision, 2> precision_names{{"fp32_partials", "native_partials"}};
}  // namespace detail

constexpr std::string_view name(precision p) {
  return detail::precision_names(p);
}
// Accepts the names above and the short ones (fp32, native).
constexpr std::optional<precision> parse_precision(std::string_view s) {
  if (auto p = detail::precision_names.parse(s)) return p;
  if (s == "fp32") return precision::fp32_partials;
  if (s == "native") return precision::native_partials;
  return std::nullopt;
}

// Bytes of the accumulator core/reduction.hpp sums `t` in: 4 (float) for fp16 and bf16, the
// element size otherwise.
constexpr int accumulator_size(dtype t) {
  return t == dtype::float16 || t == dtype::bfloat16 ? 4 : size_of(t);
}

// Bytes of one element of a partial sum (schedule memory space buffer::partial).
constexpr int partial_size(dtype t, precision p = precision::fp32_partials) {
  return p == precision::fp32_partials ? accumulator_size(t) : size_of(t);
}

namespace detail {
inline constexpr name_table<dtype, 10> dtype_names{{"int8", "uint8", "int32", "uint32", "int64",
                                                    "uint64", "float16", "bfloat16", "float32",
                                                    "float64"}};
inline constexpr name_table<reduce_op, 2> reduce_op_names{{"sum", "avg"}};
}  // namespace detail

constexpr std::string_view name(dtype t) {
  return detail::dtype_names(t);
}
constexpr std::string_view name(reduce_op op) {
  return detail::reduce_op_names(op);
}

// Accepts the names above and the short ones nccl-tests uses (half, bf16, float, double, ...).
constexpr std::optional<dtype> parse_dtype(std::string_view s) {
  if (auto t = detail::dtype_names.parse(s)) return t;
  if (s == "half" || s == "fp16") return dtype::float16;
  if (s == "bf16") return dtype::bfloat16;
  if (s == "float" || s == "fp32") return dtype::float32;
  if (s == "double" || s == "fp64") return dtype::float64;
  if (s == "int") return dtype::int32;
  return std::nullopt;
}
constexpr std::optional<reduce_op> parse_reduce_op(std::string_view s) {
  return detail::reduce_op_names.parse(s);
}

// Calls f(T{}) with the C++ type of `t`.
template <class F>
constexpr decltype(auto) visit_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::int8: return f(std::int8_t{});
    case dtype::uint8: return f(std::uint8_t{});
    case dtype::int32: return f(std::int32_t{});
    case dtype::uint32: return f(std::uint32_t{});
    case dtype::int64: return f(std::int64_t{});
    case dtype::uint64: return f(std::uint64_t{});
    case dtype::float16: return f(float16{});
    case dtype::bfloat16: return f(bfloat16{});
    case dtype::float32: return f(float{});
    case dtype::float64: break;
  }
  return f(double{});
}

}  // namespace relay
