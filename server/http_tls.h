/* HTTPS certificates for the front (http_tls.c; docs/operations.md, "TLS"). */
#ifndef RUNG_SERVER_HTTP_TLS_H
#define RUNG_SERVER_HTTP_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#include "error.h"

/* Reads the PEM chain and key and serves them from the next handshake on.
 * On failure (unreadable, not PEM, a key that is not the certificate's)
 * err names the flag and what was served before stays. Safe to call from
 * another thread while connections are served (SIGHUP). */
int http_tls_load(const char *cert_file, const char *key_file, RungError *err);

/* MHD_OPTION_HTTPS_CERT_CALLBACK: the credentials loaded last. */
int http_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                      gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

/* At exit, after the front stopped. */
void http_tls_free(void);

#endif
