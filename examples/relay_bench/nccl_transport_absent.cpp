// -x nccl where this relay-bench has no nccl transport: no NCCL, or no GPU code compiled.
#include "backend.hpp"
#include "nccl_rank.hpp"

namespace relay::bench {

std::unique_ptr<backend> make_nccl_backend(int, const std::vector<int>&, std::string& why) {
  why = "this relay-bench was built without the GPU code of the nccl transport";
  return nullptr;
}

std::unique_ptr<nccl_rank> make_nccl_rank(std::string& why) {
  why = "this relay-bench was built without the nccl transport";
  return nullptr;
}

bool launched_as_rank() {
  return false;
}

}  // namespace relay::bench
