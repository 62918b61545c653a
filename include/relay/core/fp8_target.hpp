// Which e4m3 encoding a GPU converts in hardware, by its architecture's name: what the fp8 wire
// (wire_format::fp8, "the machine's encoding") takes on that device.
//
//   gfx940, gfx941, gfx942 (MI300)        e4m3_fnuz  (v_cvt_pk_fp8_f32 converts fnuz)
//   gfx950 (MI350)                        e4m3       (OCP, v_cvt_scalef32_pk_fp8_f32)
//   NVIDIA: sm_<major><minor>             e4m3       (OCP, __nv_fp8_e4m3: what CUDA calls e4m3)
//   anything else (gfx90a, RDNA, ...)     none: no fp8 conversions; the machine's topology decides
//
// AMD names come as the runtime gives them (hipDeviceProp_t::gcnArchName, "gfx942:sramecc+:xnack-":
// the features after ':' do not change the encoding); NVIDIA's as "sm_90" (gpu::rt::
// device_architecture writes both). Host code.
#pragma once

#include <optional>
#include <string_view>

#include "relay/core/fp8.hpp"

namespace relay {

constexpr std::optional<fp8_format> fp8_of_architecture(std::string_view name) {
  const std::string_view processor = name.substr(0, name.find(':'));
  if (processor == "gfx940" || processor == "gfx941" || processor == "gfx942")
    return fp8_format::e4m3_fnuz;
  if (processor == "gfx950") return fp8_format::e4m3;
  if (processor.size() > 3 && processor.substr(0, 3) == "sm_") return fp8_format::e4m3;
  return std::nullopt;
}

}  // namespace relay
