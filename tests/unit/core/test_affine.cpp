#include "relay/core/affine.hpp"

#include <catch2/catch.hpp>

using relay::affine;
using relay::quantum_rule;
using relay::symbol_values;

TEST_CASE("affine forms evaluate over 1, n and the quanta", "[core][affine]") {
  const affine a = affine::n(3) + affine::q(0, -2) + affine::constant(5);
  symbol_values v{1, 100, 7, 0, 0, 0};
  CHECK(a.eval(v) == 3 * 100 - 2 * 7 + 5);
  CHECK((2 * a).eval(v) == 2 * (3 * 100 - 2 * 7 + 5));
  CHECK((a - a).is_zero());
}

TEST_CASE("a quantum rule floors, aligns down and falls back when zero", "[core][affine]") {
  quantum_rule chunk;  // align_down(n / 8, 128)
  chunk.base = affine::n();
  chunk.den = 8;
  chunk.align_units = 1;
  symbol_values v{1, 0, 0, 0, 0, 0};
  v[1] = 8 * 128;
  CHECK(chunk.eval(v, 128) == 128);
  v[1] = 8 * 128 - 1;  // n/8 = 127.875 -> 127 -> aligned down to 0
  CHECK(chunk.eval(v, 128) == 0);
  v[1] = 12'002'982'488;  // the spec's production count: n/8 = 1,500,372,811 -> 1,500,372,736
  CHECK(chunk.eval(v, 128) == 1'500'372'736);

  quantum_rule half_if_no_chunk;  // d = c, or n/2 when c is zero
  half_if_no_chunk.base = affine::q(0);
  half_if_no_chunk.fallback_if_zero = 0;
  half_if_no_chunk.fallback = affine::n();
  half_if_no_chunk.fallback_den = 2;
  v[1] = 1001;
  v[2] = 0;
  CHECK(half_if_no_chunk.eval(v, 128) == 500);
  v[2] = 256;
  CHECK(half_if_no_chunk.eval(v, 128) == 256);

  quantum_rule self_fallback = chunk;  // align_down(n/8), or n/8 unaligned when that is zero
  self_fallback.fallback_if_zero = quantum_rule::self;
  self_fallback.fallback = affine::n();
  self_fallback.fallback_den = 8;
  v[1] = 1000;
  CHECK(self_fallback.eval(v, 128) == 125);
}
