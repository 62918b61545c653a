// Schedules as people read them: affine sizes as "n - 6o - r", quantum rules as
// "align_down(n/8, 128)", shares of n as "3n/7".
#pragma once

#include <array>
#include <string>

#include "relay/core/affine.hpp"
#include "relay/core/ratio.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay_plan {

// What each symbol slot of an affine form prints as: "" for the constant, "n", then one short
// name per quantum.
using symbol_names = std::array<std::string, relay::symbol_count>;

// A quantum's short name is the last word of its header name ("offload piece o" -> "o",
// "first direct region d1" -> "d1"); q<i> where the header names none.
std::string quantum_symbol(const relay::schedule_header& h, int quantum);
symbol_names symbols_of(const relay::schedule_header& h);

// "n + 2c", "6o + r", "-c", "0".
std::string format_affine(const relay::affine& a, const symbol_names& symbols);
// Parenthesized when it has more than one term, for use as a factor or a dividend.
std::string format_factor(const relay::affine& a, const symbol_names& symbols);

// "align_down(n/8, 128)", "align_down((n - 6o)/2, 128); n/2 when o = 0", "3c; n/2 when c = 0".
std::string format_rule(const relay::schedule_header& h, int quantum, const symbol_names& symbols,
                        std::int64_t alignment);

// An exact ratio: "1/4", "4", "-2/3".
std::string format_ratio(relay::ratio r);
// A ratio as a share of n: "n/4", "3n/7", "n", "2n", "0".
std::string format_share(relay::ratio r);

}  // namespace relay_plan
