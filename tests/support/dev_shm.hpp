// What a test checks to show that relay leaves nothing in /dev/shm: the lines of this process's
// memory map backed by a file there (a segment created by name shows, unlinked or not).
#pragma once

#include <fstream>
#include <string>

namespace relay::testing {

inline std::string dev_shm_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line))
    if (line.find("/dev/shm/") != std::string::npos) found += line + "\n";
  return found;
}

}  // namespace relay::testing
