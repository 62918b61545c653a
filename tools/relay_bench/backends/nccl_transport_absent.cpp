// -x nccl where this relay-bench has no nccl transport: no NCCL, or no GPU code compiled.
#include "backends/backend.hpp"
#include "ranks/gpu_rank.hpp"

namespace relay::bench {

std::unique_ptr<backend> make_nccl_backend(int, const std::vector<int>&, std::string& why) {
  why = "this relay-bench was built without the GPU code of the nccl transport";
  return nullptr;
}

std::unique_ptr<gpu_rank> make_nccl_rank(std::string& why) {
  why = "this relay-bench was built without the nccl transport";
  return nullptr;
}

}  // namespace relay::bench
