// ThreadSanitizer suppressions compiled into every test (TSan reads this weak hook at start;
// other builds never call it). OpenSSL's libcrypto and libssl are not instrumented: their
// internal atomics and locks are invisible to TSan, which then reports races inside them during
// concurrent handshakes on one SSL_CTX (a documented false positive). Races in our own code are
// never suppressed here.

extern "C" const char* __tsan_default_suppressions() {
  return "race:libcrypto.so\n"
         "race:libssl.so\n";
}
