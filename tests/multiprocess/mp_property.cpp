// The multi-process property suite: random calls (all four collectives, A=2 and 4, fused and
// single, every route, dtype and operator, odd and zero counts, in and out of place), one
// process per rank over the shm transport. Every rank checks its canaries and its untouched
// input, then every rank checks every rank's output (all-gathered through the bootstrap)
// against the naive reference. Run under relay-run:
//
//   relay-run -n 8 -- relay_mp_property [CALLS] [SEED] [fp8]
//
// `fp8`: every call on the fp8 wire (issue 12; make_fp8: a floating dtype, either encoding, the
// five data kinds), checked against the fp8 bound.
#include "multiprocess/mp_support.hpp"

using namespace relay;
using namespace relay::testing;

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 2000;
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20261201;
  auto comm = connect_or_exit();
  // 2 cores, 8 processes: keep each call small.
  const bool fp8 = argc > 3 && std::string(argv[3]) == "fp8";
  return property_run(
      *comm, calls, seed, 20'000, fp8 ? " on the fp8 wire" : "",
      [&](const property_case& c, rank_frame& f) { return call(*comm, c, f); }, fp8);
}
