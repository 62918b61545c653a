#include "support/cli.hpp"
#include "sweep/sizes.hpp"

#include <catch2/catch.hpp>

using namespace relay::bench;

TEST_CASE("parse_bytes: nccl-tests' units, powers of 1024", "[bench]") {
  CHECK(parse_bytes("4096") == 4096);
  CHECK(parse_bytes("4K") == 4096);
  CHECK(parse_bytes("4KB") == 4096);
  CHECK(parse_bytes("4k") == 4096);
  CHECK(parse_bytes("1.5M") == 1572864);
  CHECK(parse_bytes("1G") == 1073741824);
  CHECK(parse_bytes("1GiB") == 1073741824);
  CHECK(parse_bytes("0") == 0);
  CHECK(parse_bytes("512B") == 512);
  CHECK_FALSE(parse_bytes(""));
  CHECK_FALSE(parse_bytes("K"));
  CHECK_FALSE(parse_bytes("4X"));
  CHECK_FALSE(parse_bytes("-4K"));
  CHECK_FALSE(parse_bytes("4KK"));
  CHECK_FALSE(parse_bytes("2048T"));  // past 2^50
}

TEST_CASE("format_bytes: 1024-based, with binary units", "[bench]") {
  using relay::cli::format_bytes;
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(4096) == "4 KiB");
  CHECK(format_bytes(1572864) == "1.5 MiB");
  CHECK(format_bytes(std::int64_t{1} << 30) == "1 GiB");
}

TEST_CASE("size_grid: the spec's grid is 19 sizes, 4 KB to 1 GB", "[bench]") {
  const auto grid = size_grid(4096, std::int64_t{1} << 30, 2, 0);
  REQUIRE(grid.size() == 19);
  CHECK(grid.front() == 4096);
  CHECK(grid[1] == 8192);
  CHECK(grid.back() == std::int64_t{1} << 30);
}

TEST_CASE("size_grid: factors, steps and single sizes", "[bench]") {
  CHECK(size_grid(4096, 65536, 4, 0) == std::vector<std::int64_t>{4096, 16384, 65536});
  CHECK(size_grid(4096, 70000, 4, 0) == std::vector<std::int64_t>{4096, 16384, 65536});
  CHECK(size_grid(1000, 3500, 2, 1000) == std::vector<std::int64_t>{1000, 2000, 3000});
  CHECK(size_grid(4096, 4096, 2, 0) == std::vector<std::int64_t>{4096});
  CHECK(size_grid(10, 100, 1.01, 0).size() == 1);  // a factor that cannot grow 10 stops
}
