// One all-gather, typed: every rank contributes a value of a trivially copyable struct (and,
// where the exchange carries one, a text after it; or an array of them, as long on every rank),
// and every rank gets every rank's copy, each checked to be the size of the struct. What
// transports and communicators exchange at set-up (memory handles, segment names), in their
// agreements and outcomes, and when they explain a failure, all go through here instead of
// unpacking bytes by hand.
//
//   struct record { std::uint64_t pid; std::int32_t device; };
//   std::vector<record> all;
//   if (status s = relay::exchange(boot, mine, all, timeout, "set-up record"); !s) return s;
//
// Every rank receives the same bytes, so a contribution of the wrong size (a rank built from
// other sources) fails the exchange alike on every rank: errc::mismatch naming that rank.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/core/status.hpp"

namespace relay {

// What an exchange carries: plain bytes that mean the same in every process.
template <class T>
concept exchangeable = std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>;

// A rank's value and the text it sent after it.
template <exchangeable T>
struct with_text {
  T value{};
  std::string text;
};

namespace detail {

inline status malformed(std::size_t rank, std::string_view what, std::size_t got,
                        std::size_t want) {
  return {errc::mismatch,
          "rank " + std::to_string(rank) + " sent a " + std::string(what) + " of " +
              std::to_string(got) + " bytes, not " + std::to_string(want),
          static_cast<int>(rank)};
}

inline std::string text_of(const std::vector<std::byte>& bytes, std::size_t from) {
  if (bytes.size() <= from) return {};
  return {reinterpret_cast<const char*>(bytes.data()) + from, bytes.size() - from};
}

}  // namespace detail

// Every rank's `mine` into all[r] (collective). `what` names the value in an error.
template <exchangeable T>
status exchange(bootstrap& boot, const T& mine, std::vector<T>& all, milliseconds timeout,
                std::string_view what) {
  std::vector<std::vector<std::byte>> bytes;
  if (status s = boot.all_gather(std::as_bytes(std::span(&mine, 1)), bytes, timeout); !s) return s;
  all.resize(bytes.size());
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    if (bytes[r].size() != sizeof(T)) return detail::malformed(r, what, bytes[r].size(), sizeof(T));
    std::memcpy(&all[r], bytes[r].data(), sizeof(T));
  }
  return {};
}

// The same with a text of any length after each value.
template <exchangeable T>
status exchange(bootstrap& boot, const T& mine, std::string_view text,
                std::vector<with_text<T>>& all, milliseconds timeout, std::string_view what) {
  std::string out(reinterpret_cast<const char*>(&mine), sizeof(T));
  out.append(text);
  std::vector<std::vector<std::byte>> bytes;
  if (status s = boot.all_gather(std::as_bytes(std::span(out)), bytes, timeout); !s) return s;
  all.resize(bytes.size());
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    if (bytes[r].size() < sizeof(T)) return detail::malformed(r, what, bytes[r].size(), sizeof(T));
    std::memcpy(&all[r].value, bytes[r].data(), sizeof(T));
    all[r].text = detail::text_of(bytes[r], sizeof(T));
  }
  return {};
}

// Every rank's `mine`, as many values on every rank, into all[r] (collective).
template <exchangeable T>
status exchange(bootstrap& boot, std::span<const T> mine, std::vector<std::vector<T>>& all,
                milliseconds timeout, std::string_view what) {
  std::vector<std::vector<std::byte>> bytes;
  if (status s = boot.all_gather(std::as_bytes(mine), bytes, timeout); !s) return s;
  all.resize(bytes.size());
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    if (bytes[r].size() != mine.size_bytes())
      return detail::malformed(r, what, bytes[r].size(), mine.size_bytes());
    all[r].resize(mine.size());
    std::memcpy(all[r].data(), bytes[r].data(), mine.size_bytes());
  }
  return {};
}

// Every rank's text into all[r] (collective).
inline status exchange(bootstrap& boot, std::string_view mine, std::vector<std::string>& all,
                       milliseconds timeout) {
  std::vector<std::vector<std::byte>> bytes;
  if (status s = boot.all_gather(std::as_bytes(std::span(mine)), bytes, timeout); !s) return s;
  all.resize(bytes.size());
  for (std::size_t r = 0; r < bytes.size(); ++r)
    all[r] = detail::text_of(bytes[r], 0);
  return {};
}

}  // namespace relay
