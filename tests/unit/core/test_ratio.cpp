#include "relay/core/ratio.hpp"

#include <catch2/catch.hpp>

using relay::ratio;

TEST_CASE("ratio normalizes sign and common factors", "[core][ratio]") {
  CHECK(ratio{2, 4} == ratio{1, 2});
  CHECK(ratio{3, -6} == ratio{-1, 2});
  CHECK(ratio{0, 5} == ratio{0});
  CHECK(ratio{-4, -8}.num == 1);
  CHECK(ratio{-4, -8}.den == 2);
}

TEST_CASE("ratio arithmetic is exact", "[core][ratio]") {
  CHECK(ratio{1, 8} + ratio{1, 8} == ratio{1, 4});
  CHECK(ratio{3, 10} + ratio{3, 10} == ratio{3, 5});
  CHECK(ratio{1, 2} - ratio{1, 3} == ratio{1, 6});
  CHECK(ratio{2, 3} * ratio{9, 4} == ratio{3, 2});
  CHECK(ratio{1, 2} / ratio{39, 100} == ratio{50, 39});
  CHECK(ratio{3, 7}.to_double() == Approx(0.428571428571));
}

TEST_CASE("ratio orders by value", "[core][ratio]") {
  CHECK(ratio{1, 4} < ratio{3, 7});
  CHECK(ratio{-1, 2} < ratio{0});
  CHECK(relay::max(ratio{3, 5}, ratio{2, 3}) == ratio{2, 3});
  STATIC_REQUIRE(ratio{5, 3} > ratio{3, 2});
}
