// -x ipc where this relay-bench has no GPU code compiled (no nvcc at configure time).
#include "ranks/gpu_rank.hpp"

namespace relay::bench {

std::unique_ptr<gpu_rank> make_ipc_rank(std::size_t, int, ipc_vendor, bool, std::string& why) {
  why =
      "this relay-bench was built without the GPU code of the ipc transport (configure where "
      "CUDA is found)";
  return nullptr;
}

}  // namespace relay::bench
