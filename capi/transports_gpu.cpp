// The GPU builds' transports (librelay_c_cuda, librelay_c_hip): shm, ipc and nccl. Compiled by
// nvcc or a HIP compiler: the ipc and nccl transports hold kernels. The nccl transport finds
// NCCL (RCCL on AMD) when it is asked for (transport/nccl/library.hpp), so the library loads,
// and shm and ipc run, where there is none.
#include "transports.hpp"

#include "relay/core/fp8_target.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc/factory.hpp"
#include "relay/transport/nccl/factory.hpp"
#include "relay/transport/shm/factory.hpp"

namespace relay::c_abi {

const char* compiled_transports() {
  return "shm,ipc,nccl";
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
  if (name == "nccl") return nccl_factory()(boot, env, out);
  return {errc::unsupported, "this library was built without '" + std::string(name) + "'"};
}

std::optional<fp8_format> device_fp8(int device) {
  std::string arch;
  if (gpu::rt::device_architecture(arch, device) != gpu::rt::success) {
    (void)gpu::rt::get_last_error();  // asked, not failed: clear it for the next check
    return std::nullopt;
  }
  return fp8_of_architecture(arch);
}

}  // namespace relay::c_abi
