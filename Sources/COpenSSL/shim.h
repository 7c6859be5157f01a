#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <pthread.h>
#include <sys/prctl.h>

/// Names the calling thread (prctl is variadic); Linux keeps the first 15 bytes.
static inline void copenssl_name_this_thread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

/// SSL_set_tlsext_host_name is a macro: sets the SNI host name.
static inline int copenssl_set_sni(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// SSL_CTX_set_min_proto_version is a macro.
static inline int copenssl_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

/// SSL_CTX_set_mode is a macro; we want SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER so retried writes may move.
static inline void copenssl_ctx_set_moving_write_buffer(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
#endif
