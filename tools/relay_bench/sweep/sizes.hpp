// Message sizes on the command line and the sweep grid built from them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace relay::bench {

// "4096", "4K", "4KB", "1.5M", "1G", "1GiB": bytes, with K, M, G, T as powers of 1024 (as
// nccl-tests reads them). nullopt for anything else, for negative sizes, and past 2^50 bytes.
std::optional<std::int64_t> parse_bytes(std::string_view text);

// The sweep: begin, then begin*factor (step 0) or begin+step, ... while <= end. Sizes are
// bytes; a factor below or at 1 with no step, or a step below 0, gives just `begin`.
std::vector<std::int64_t> size_grid(std::int64_t begin, std::int64_t end, double factor,
                                    std::int64_t step);

}  // namespace relay::bench
