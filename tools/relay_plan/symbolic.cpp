#include "symbolic.hpp"

#include <cstdlib>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

namespace relay_plan {

std::string quantum_symbol(const relay::schedule_header& h, int quantum) {
  const char* full = h.quantum_names[static_cast<std::size_t>(quantum)];
  const std::string_view name = full != nullptr ? full : "";
  const std::size_t space = name.rfind(' ');
  if (name.empty() || space == std::string_view::npos || space + 1 == name.size())
    return fmt::format("q{}", quantum);
  return std::string(name.substr(space + 1));
}

symbol_names symbols_of(const relay::schedule_header& h) {
  symbol_names s{"", "n"};
  for (int i = 0; i < relay::max_quanta; ++i)
    s[static_cast<std::size_t>(2 + i)] = quantum_symbol(h, i);
  return s;
}

std::string format_affine(const relay::affine& a, const symbol_names& symbols) {
  // n first, then the quanta, the constant last: "n - 6o + 1" reads like the spec writes it.
  std::string out;
  auto term = [&](std::int32_t coef, const std::string& symbol) {
    if (coef == 0) return;
    const std::int32_t magnitude = std::abs(coef);
    if (out.empty())
      out += coef < 0 ? "-" : "";
    else
      out += coef < 0 ? " - " : " + ";
    if (magnitude != 1 || symbol.empty()) out += std::to_string(magnitude);
    out += symbol;
  };
  for (std::size_t slot = 1; slot < relay::symbol_count; ++slot)
    term(a.coef[slot], symbols[slot]);
  term(a.coef[0], symbols[0]);
  return out.empty() ? "0" : out;
}

std::string format_factor(const relay::affine& a, const symbol_names& symbols) {
  int terms = 0;
  for (auto c : a.coef)
    terms += c != 0 ? 1 : 0;
  const std::string s = format_affine(a, symbols);
  return terms > 1 ? fmt::format("({})", s) : s;
}

std::string format_rule(const relay::schedule_header& h, int quantum, const symbol_names& symbols,
                        std::int64_t alignment) {
  const relay::quantum_rule& q = h.quanta[static_cast<std::size_t>(quantum)];
  auto scaled = [&](const relay::affine& base, std::int32_t num, std::int32_t den) {
    if (num == 1 && den == 1) return format_affine(base, symbols);
    std::string s = format_factor(base, symbols);
    if (num != 1) fmt::format_to(std::back_inserter(s), "*{}", num);
    if (den != 1) fmt::format_to(std::back_inserter(s), "/{}", den);
    return s;
  };
  std::string out = scaled(q.base, q.num, q.den);
  if (q.align_units > 0) out = fmt::format("align_down({}, {})", out, q.align_units * alignment);
  if (q.fallback_if_zero != relay::quantum_rule::none) {
    const std::string& zero = q.fallback_if_zero == relay::quantum_rule::self
                                  ? symbols[static_cast<std::size_t>(2 + quantum)]
                                  : symbols[static_cast<std::size_t>(2 + q.fallback_if_zero)];
    fmt::format_to(std::back_inserter(out), "; {} when {} = 0",
                   scaled(q.fallback, q.fallback_num, q.fallback_den), zero);
  }
  return out;
}

std::string format_ratio(relay::ratio r) {
  return r.den == 1 ? fmt::format("{}", r.num) : fmt::format("{}/{}", r.num, r.den);
}

std::string format_share(relay::ratio r) {
  if (r.num == 0) return "0";
  const std::string numerator = r.num == 1 ? "n" : r.num == -1 ? "-n" : fmt::format("{}n", r.num);
  return r.den == 1 ? numerator : fmt::format("{}/{}", numerator, r.den);
}

}  // namespace relay_plan
