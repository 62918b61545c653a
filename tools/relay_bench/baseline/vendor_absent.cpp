// The vendor baseline where this relay-bench was built without NCCL or RCCL (the nccl
// transport's stubs are nccl_transport_absent.cpp).
#include "baseline/vendor.hpp"

namespace relay::bench {

std::unique_ptr<nccl_baseline> make_nccl_baseline(int, const std::vector<int>&, std::string& why) {
  why = "this relay-bench was built without NCCL/RCCL";
  return nullptr;
}

}  // namespace relay::bench
