// The vendor baseline where this relay-bench was built without NCCL or RCCL.
#include "backend.hpp"
#include "nccl_baseline.hpp"
#include "nccl_rank.hpp"

namespace relay::bench {

std::unique_ptr<nccl_baseline> make_nccl_baseline(int, const std::vector<int>&, std::string& why) {
  why = "this relay-bench was built without NCCL/RCCL";
  return nullptr;
}

std::unique_ptr<nccl_rank> make_nccl_rank(std::string& why) {
  why = "this relay-bench was built without the nccl transport";
  return nullptr;
}

bool launched_as_rank() {
  return false;
}

std::unique_ptr<backend> make_nccl_backend(int, const std::vector<int>&, std::string& why) {
  why = "this relay-bench was built without NCCL/RCCL";
  return nullptr;
}

}  // namespace relay::bench
