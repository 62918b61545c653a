// The CUDA build's transports: shm, ipc, and nccl where NCCL was found (RELAY_C_HAVE_NCCL).
// Compiled by nvcc: the ipc and nccl transports hold kernels.
#include "transports.hpp"

#include "relay/transport/ipc/factory.hpp"
#include "relay/transport/shm/factory.hpp"
#if RELAY_C_HAVE_NCCL
#include "relay/transport/nccl/factory.hpp"
#endif

namespace relay::c_abi {

const char* compiled_transports() {
  return RELAY_C_HAVE_NCCL ? "shm,ipc,nccl" : "shm,ipc";
}

status make_transport(std::string_view name, bootstrap& boot, const environment& env,
                      std::size_t bytes, std::unique_ptr<transport>& out) {
  if (name == "shm") {
    shm_options o;
    if (status s = shm_options_from_environment(o); !s) return s;
    if (bytes > 0) o.bytes_per_rank = bytes;
    return make_shm_transport(boot, o, env.timeout, out);
  }
  if (name == "ipc") {
    ipc_options o;
    if (status s = ipc_options_from_environment(o); !s) return s;
    if (bytes > 0) o.bytes_per_rank = bytes;
    return ipc_factory(o)(boot, env, out);
  }
#if RELAY_C_HAVE_NCCL
  if (name == "nccl") return nccl_factory()(boot, env, out);
#endif
  return {errc::unsupported, "this library was built without '" + std::string(name) + "'"};
}

}  // namespace relay::c_abi
