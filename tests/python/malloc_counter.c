/* Counts the calling thread's calls into the malloc family while counting is on: preloaded
 * (LD_PRELOAD) into the ranks of test_calls.py, which turn it on around one call into relay's
 * library (count), and around a whole call of relay.torch, the library's calls among it (total:
 * a window of its own, so that the two nest). glibc's own functions allocate; only the counts
 * are added. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);

/* Initial-exec: reading it never allocates (a preloaded library's TLS is static). */
static __thread int counting __attribute__((tls_model("initial-exec")));
static __thread long counted __attribute__((tls_model("initial-exec")));
static __thread int totalling __attribute__((tls_model("initial-exec")));
static __thread long totalled __attribute__((tls_model("initial-exec")));

void relay_test_count_begin(void) {
  counted = 0;
  counting = 1;
}
long relay_test_count_end(void) {
  counting = 0;
  return counted;
}
void relay_test_total_begin(void) {
  totalled = 0;
  totalling = 1;
}
long relay_test_total_end(void) {
  totalling = 0;
  return totalled;
}

static void count(void) {
  if (counting) ++counted;
  if (totalling) ++totalled;
}

void* malloc(size_t n) {
  count();
  return __libc_malloc(n);
}
void* calloc(size_t k, size_t n) {
  count();
  return __libc_calloc(k, n);
}
void* realloc(void* p, size_t n) {
  count();
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  count();
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  count();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  count();
  *out = __libc_memalign(a, n);
  return *out ? 0 : ENOMEM;
}
void free(void* p) {
  __libc_free(p);
}
