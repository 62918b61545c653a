// A program outside the relay tree, built against the installed package.
#include <relay/relay.hpp>

#include <cstdio>

constexpr auto& s = relay::schedule_v<relay::collective::all_gather, 2, 8>;
static_assert(relay::beta_cost(s, relay::mi350x) == relay::ratio{1, 4});

int main() {
  std::printf("installed relay: all-gather A=2 N=8 ceiling %.2fx\n",
              relay::ceiling(s, relay::mi350x).to_double());
  return 0;
}
