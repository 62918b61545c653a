// Calls larger than the shm transport's data area (multiprocess/pieces_suite.hpp), one process
// per rank. Run under relay-run:
//
//   RELAY_SHM_BYTES=65536 relay-run -n 8 -- relay_mp_pieces [STRIDE]
//
// STRIDE (default 1): every STRIDE-th case only (the sanitizer builds take a share).
#include "multiprocess/pieces_suite.hpp"

using namespace relay;
using namespace relay::testing;

int main(int argc, char** argv) {
  const int stride = argc > 1 ? std::atoi(argv[1]) : 1;
  auto comm = connect_or_exit();
  return pieces_run(*comm, stride, "",
                    [&](const property_case& c, rank_frame& f) { return call(*comm, c, f); });
}
