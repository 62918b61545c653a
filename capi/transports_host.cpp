// The host build's transports: shm only.
#include "transports.hpp"

#include "relay/transport/shm/factory.hpp"

namespace relay::c_abi {

const char* compiled_transports() {
  return "shm";
}

status make_transport(std::string_view name, bootstrap& boot, const environment& env,
                      std::size_t bytes, std::unique_ptr<transport>& out) {
  if (name != "shm")
    return {errc::unsupported, "this library was built without '" + std::string(name) + "'"};
  shm_options o;
  if (status s = shm_options_from_environment(o); !s) return s;
  if (bytes > 0) o.bytes_per_rank = bytes;
  return make_shm_transport(boot, o, env.timeout, out);
}

std::optional<fp8_format> device_fp8(int) {
  return std::nullopt;
}

}  // namespace relay::c_abi
