// -x nccl where this relay-bench links NCCL for its baseline but compiles no GPU code.
#include "backend.hpp"

namespace relay::bench {

std::unique_ptr<backend> make_nccl_backend(int, const std::vector<int>&, std::string& why) {
  why = "this relay-bench was built without the GPU code of the nccl transport";
  return nullptr;
}

}  // namespace relay::bench
