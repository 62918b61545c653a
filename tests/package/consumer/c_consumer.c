/* The C ABI from the installed package (find_package(relay), relay::c): its version and
 * transports, with nothing on the library path (the executable's RUNPATH finds it). */
#include <relay/c/relay.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  printf("librelay_c %s (%s)\n", relay_version(), relay_transports());
  return relay_abi_version() == RELAY_C_ABI_VERSION && strcmp(relay_transports(), "shm") == 0 ? 0
                                                                                              : 1;
}
