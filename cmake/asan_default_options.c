/* asan_default_options.c - linked into every target of a TILEC_SANITIZE
 * build: AddressSanitizer reads these options before $ASAN_OPTIONS (which
 * adds to them).
 *
 * intercept_tls_get_addr=0: processes that dlopen libnvrtc (the CLI's
 * --emit=cubin, the runtime and its tests) hold dynamic TLS, and at exit
 * LeakSanitizer's tracer could misread glibc's dynamic TLS vector and
 * crash with signal 11 (google/sanitizers#1322). Which run crashed
 * depended only on the memory layout: the length of the working
 * directory's path moved it (twenty-ninth session). Leak checking stays
 * on. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "intercept_tls_get_addr=0"; }
