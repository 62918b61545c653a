/* The C ABI from the installed package (find_package(relay), relay::c or relay::c_hip): its
 * version and transports, with nothing on the library path (the executable's RUNPATH finds it).
 * TRANSPORTS: what the library linked must report. */
#include <relay/c/relay.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  printf("%s %s (%s)\n", LIBRARY, relay_version(), relay_transports());
  return relay_abi_version() == RELAY_C_ABI_VERSION && strcmp(relay_transports(), TRANSPORTS) == 0
             ? 0
             : 1;
}
