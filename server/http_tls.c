/* HTTPS for the front (docs/operations.md, "TLS"): the certificate chain
 * and key rungd serves, read from PEM files at start and again on SIGHUP.
 * libmicrohttpd's GnuTLS sessions ask http_tls_retrieve for them at each
 * handshake, so a new certificate is served to the next connection while
 * connections already open keep the session they have. A set of
 * credentials is never freed while rungd runs (a handshake on the engine
 * thread may hold it while SIGHUP's reload runs on the main thread); each
 * reload keeps a few kilobytes. */
#include "http_tls.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHAIN 16 /* certificates in one chain */

typedef struct Creds {
    gnutls_pcert_st pcerts[MAX_CHAIN];
    unsigned n;
    gnutls_privkey_t key;
    struct Creds *older;
} Creds;

static _Atomic(Creds *) current;

static void creds_free(Creds *c)
{
    for (unsigned i = 0; i < c->n; i++)
        gnutls_pcert_deinit(&c->pcerts[i]);
    if (c->key)
        gnutls_privkey_deinit(c->key);
    free(c);
}

/* Whether key signs what the chain's first certificate verifies: a
 * certificate and a key that do not belong together are refused at load,
 * not at each client's handshake. */
static bool key_matches(const Creds *c)
{
    static const unsigned char probe[] = "rungd: does this key match the certificate?";
    gnutls_datum_t data = {(unsigned char *)probe, sizeof probe}, sig = {NULL, 0};
    int pk = gnutls_pubkey_get_pk_algorithm(c->pcerts[0].pubkey, NULL);
    gnutls_sign_algorithm_t algo = gnutls_pk_to_sign(pk, GNUTLS_DIG_SHA256);
    if (gnutls_privkey_sign_data(c->key, GNUTLS_DIG_SHA256, 0, &data, &sig) < 0)
        return false;
    bool ok = gnutls_pubkey_verify_data2(c->pcerts[0].pubkey, algo, 0, &data, &sig) >= 0;
    gnutls_free(sig.data);
    return ok;
}

int http_tls_load(const char *cert_file, const char *key_file, RungError *err)
{
    Creds *c = calloc(1, sizeof *c);
    if (c == NULL)
        abort();
    gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
    int rc;
    if ((rc = gnutls_load_file(cert_file, &cert)) < 0) {
        rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "tls-cert", "--tls-cert %s: cannot read: %s",
                       cert_file, gnutls_strerror(rc));
        goto fail;
    }
    if ((rc = gnutls_load_file(key_file, &key)) < 0) {
        rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "tls-key", "--tls-key %s: cannot read: %s",
                       key_file, gnutls_strerror(rc));
        goto fail;
    }
    c->n = MAX_CHAIN;
    if ((rc = gnutls_pcert_list_import_x509_raw(c->pcerts, &c->n, &cert, GNUTLS_X509_FMT_PEM, 0)) <
            0 ||
        c->n == 0) {
        c->n = 0;
        rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "tls-cert",
                       "--tls-cert %s: not PEM certificates (at most %d): %s", cert_file, MAX_CHAIN,
                       gnutls_strerror(rc));
        goto fail;
    }
    if (gnutls_privkey_init(&c->key) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(c->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "tls-key",
                       "--tls-key %s: not an unencrypted PEM private key: %s", key_file,
                       gnutls_strerror(rc));
        goto fail;
    }
    if (!key_matches(c)) {
        rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "tls-key",
                       "--tls-key %s is not the key of --tls-cert %s", key_file, cert_file);
        goto fail;
    }
    gnutls_free(cert.data);
    if (key.data) {
        memset(key.data, 0, key.size);
        gnutls_free(key.data);
    }
    c->older = atomic_load(&current);
    atomic_store(&current, c);
    return 0;
fail:
    gnutls_free(cert.data);
    if (key.data) {
        memset(key.data, 0, key.size);
        gnutls_free(key.data);
    }
    creds_free(c);
    return err->code;
}

int http_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                      gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    (void)session;
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    Creds *c = atomic_load(&current);
    if (c == NULL)
        return -1;
    *pcert = c->pcerts;
    *pcert_length = c->n;
    *pkey = c->key;
    return 0;
}

void http_tls_free(void)
{
    Creds *c = atomic_exchange(&current, NULL);
    while (c != NULL) {
        Creds *older = c->older;
        creds_free(c);
        c = older;
    }
}
