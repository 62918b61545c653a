// The typed exchange over a bootstrap whose all-gather hands back canned bytes: every rank's
// value comes back as sent, a contribution of the wrong size fails naming its rank, and the
// all-gather's own failure comes back unchanged.
#include "relay/bootstrap/exchange.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <span>

using namespace relay;
using namespace std::chrono_literals;

namespace {

// Rank 1 of 3: its all-gather returns `replies` (or fails with `failure`) and records what this
// rank sent.
struct canned final : bootstrap {
  std::vector<std::vector<std::byte>> replies;
  status failure;
  std::vector<std::byte> sent;
  int rank() const override { return 1; }
  int size() const override { return 3; }
  status all_gather(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                    milliseconds) override {
    sent.assign(mine.begin(), mine.end());
    if (!failure) return failure;
    all = replies;
    return {};
  }
  status barrier(milliseconds) override { return {}; }
};

struct record {
  std::int32_t slot;
  std::uint64_t pid;
};

template <class T>
std::vector<std::byte> bytes_of(const T& v, std::string_view text = {}) {
  std::string b(reinterpret_cast<const char*>(&v), sizeof v);
  b.append(text);
  const auto all = std::as_bytes(std::span(b));
  return {all.begin(), all.end()};
}

}  // namespace

TEST_CASE("exchange: every rank's struct, as each sent it", "[bootstrap][exchange]") {
  canned boot;
  const record mine{7, 1002};
  boot.replies = {bytes_of(record{3, 1001}), bytes_of(mine), bytes_of(record{-1, 1003})};
  std::vector<record> all;
  REQUIRE(exchange(boot, mine, all, 1s, "record"));
  CHECK(boot.sent == bytes_of(mine));
  REQUIRE(all.size() == 3);
  CHECK((all[0].slot == 3 && all[0].pid == 1001));
  CHECK((all[1].slot == 7 && all[1].pid == 1002));
  CHECK((all[2].slot == -1 && all[2].pid == 1003));
}

TEST_CASE("exchange: a contribution of another size names its rank on every rank",
          "[bootstrap][exchange]") {
  canned boot;
  std::vector<std::byte> short_one(sizeof(record) - 4);
  boot.replies = {bytes_of(record{}), bytes_of(record{}), short_one};
  std::vector<record> all;
  const status s = exchange(boot, record{}, all, 1s, "registration");
  CHECK(s.code() == errc::mismatch);
  CHECK(s.peer() == 2);
  CHECK(s.message() == "rank 2 sent a registration of " + std::to_string(sizeof(record) - 4) +
                           " bytes, not " + std::to_string(sizeof(record)));
  std::vector<with_text<record>> texts;
  CHECK(exchange(boot, record{}, "", texts, 1s, "registration").peer() == 2);
  // Longer is as wrong as shorter where the value comes alone.
  boot.replies = {std::vector<std::byte>(sizeof(record) + 4), bytes_of(record{}),
                  bytes_of(record{})};
  const status longer = exchange(boot, record{}, all, 1s, "registration");
  CHECK(longer.code() == errc::mismatch);
  CHECK(longer.peer() == 0);
}

TEST_CASE("exchange: the all-gather's failure comes back as it was", "[bootstrap][exchange]") {
  canned boot;
  boot.failure = {errc::timeout, "rank 0 did not join", 0};
  std::vector<record> all;
  const status s = exchange(boot, record{}, all, 1s, "record");
  CHECK(s.code() == errc::timeout);
  CHECK(s.message() == "rank 0 did not join");
  std::vector<std::string> texts;
  CHECK(exchange(boot, "mine", texts, 1s).code() == errc::timeout);
}

TEST_CASE("exchange: a struct with a text after it, and texts alone", "[bootstrap][exchange]") {
  canned boot;
  boot.replies = {bytes_of(std::int32_t{4}, "refused: no memory"), bytes_of(std::int32_t{0}),
                  bytes_of(std::int32_t{9}, "x")};
  std::vector<with_text<std::int32_t>> all;
  REQUIRE(exchange(boot, std::int32_t{0}, "", all, 1s, "outcome"));
  CHECK(boot.sent == bytes_of(std::int32_t{0}));
  REQUIRE(all.size() == 3);
  CHECK((all[0].value == 4 && all[0].text == "refused: no memory"));
  CHECK((all[1].value == 0 && all[1].text.empty()));
  CHECK((all[2].value == 9 && all[2].text == "x"));

  boot.replies = {bytes_of('a', "bc"), {}, bytes_of('d')};
  std::vector<std::string> texts;
  REQUIRE(exchange(boot, "xyz", texts, 1s));
  CHECK(boot.sent.size() == 3);
  CHECK(texts == std::vector<std::string>{"abc", "", "d"});
}

TEST_CASE("exchange: arrays as long on every rank", "[bootstrap][exchange]") {
  canned boot;
  const std::vector<double> mine{0.5, 2.0};
  auto bytes_of_array = [](std::vector<double> v) {
    const auto b = std::as_bytes(std::span(v));
    return std::vector<std::byte>(b.begin(), b.end());
  };
  boot.replies = {bytes_of_array({1.0, 1.5}), bytes_of_array(mine), bytes_of_array({-3.0, 9.0})};
  std::vector<std::vector<double>> all;
  REQUIRE(exchange(boot, std::span<const double>(mine), all, 1s, "list of times"));
  CHECK(boot.sent == bytes_of_array(mine));
  CHECK(all == std::vector<std::vector<double>>{{1.0, 1.5}, {0.5, 2.0}, {-3.0, 9.0}});
  // A rank that ran another number of iterations is named.
  boot.replies[2] = bytes_of_array({-3.0});
  const status s = exchange(boot, std::span<const double>(mine), all, 1s, "list of times");
  CHECK(s.code() == errc::mismatch);
  CHECK(s.message() == "rank 2 sent a list of times of 8 bytes, not 16");
}
