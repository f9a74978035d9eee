/* SPDX-License-Identifier: MIT */
/* HTTPS interception for scoped secrets (tls.h), with OpenSSL. The CA is
 * made in netd, after the sandbox was cloned: its private key is in no
 * other process and in no file. Its certificate carries name constraints
 * naming only the secrets' hosts, so even a copy of its key could vouch for
 * no other site. */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostname.h"
#include "net_addr.h"
#include "util.h"

#define LEAF_CACHE 64
#define VALID_DAYS 365

struct aj_tls {
	EVP_PKEY *ca_key, *leaf_key;
	X509 *ca;
	char *ca_pem;
	SSL_CTX *srv, *cli;
	pthread_mutex_t lock; /* the leaf cache */
	struct {
		char host[AJ_HOST_MAX + 1];
		X509 *cert;
	} leaf[LEAF_CACHE];
	size_t n_leaf;
};

/* the host the client must name in its SNI, per server-side SSL */
typedef struct sni_check {
	char host[AJ_HOST_MAX + 1];
	bool mismatch;
	bool h2; /* ALPN may pick h2 (on_alpn) */
} sni_check;

static int sni_index = -1;
static pthread_once_t sni_once = PTHREAD_ONCE_INIT;

static void sni_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	free(ptr);
}

static void sni_index_new(void)
{
	sni_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, sni_free);
}

/* The i-th host whose HTTPS is intercepted (the secrets' hosts, then
 * --inspect's), or NULL past the last. */
static const char *intercepted_host(const aj_policy *p, size_t i)
{
	for (size_t k = 0; k < p->n_secrets; k++) {
		if (i < p->secrets[k].n_hosts)
			return p->secrets[k].hosts[i];
		i -= p->secrets[k].n_hosts;
	}
	return i < p->n_inspect ? p->inspect[i] : NULL;
}

bool aj_tls_intercepts(const aj_policy *p, const char *host)
{
	if (!aj_net_tls_wanted(p))
		return false;
	const char *h;
	for (size_t i = 0; (h = intercepted_host(p, i)); i++)
		if (aj_host_match(h, host))
			return true;
	return false;
}

static bool is_ipv4(const char *s)
{
	unsigned char a[4];
	return inet_pton(AF_INET, s, a) == 1;
}

static int set_random_serial(X509 *x)
{
	BIGNUM *bn = BN_new();
	int ok = bn && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
		 BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	return ok ? 0 : -1;
}

static int add_ext(X509 *issuer, X509 *subject, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, issuer, subject, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	int ok = ext && X509_add_ext(subject, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* "critical,permitted;DNS:host,...": the intercepted hosts ("*.d" -> d), and
 * at least one entry of each kind (a kind without any is unconstrained) */
static char *name_constraints(const aj_policy *p)
{
	size_t cap = 64;
	const char *host;
	for (size_t i = 0; (host = intercepted_host(p, i)); i++)
		cap += strlen(host) + 48;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	size_t o = (size_t)snprintf(s, cap, "critical");
	bool dns = false, ip = false;
	for (size_t i = 0; (host = intercepted_host(p, i)); i++) {
		if (is_ipv4(host)) {
			o += (size_t)snprintf(s + o, cap - o, ",permitted;IP:%s/255.255.255.255",
					      host);
			ip = true;
		} else {
			o += (size_t)snprintf(s + o, cap - o, ",permitted;DNS:%s",
					      host[0] == '*' ? host + 2 : host);
			dns = true;
		}
	}
	if (!dns)
		o += (size_t)snprintf(s + o, cap - o, ",permitted;DNS:invalid");
	if (!ip)
		o += (size_t)snprintf(s + o, cap - o, ",permitted;IP:0.0.0.0/255.255.255.255");
	return s;
}

static X509 *make_ca(const aj_policy *p, EVP_PKEY *key)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	unsigned char id[6];
	char cn[64];
	char *nc = name_constraints(p);
	bool ok = x && name && nc && RAND_bytes(id, sizeof(id)) == 1;
	if (ok)
		snprintf(cn, sizeof(cn), "agentjail sandbox CA %02x%02x%02x%02x%02x%02x", id[0],
			 id[1], id[2], id[3], id[4], id[5]);
	ok = ok && X509_set_version(x, 2) && set_random_serial(x) == 0 &&
	     X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), 86400L * VALID_DAYS) &&
	     X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"agentjail",
					-1, -1, 0) &&
	     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
					0) &&
	     X509_set_subject_name(x, name) && X509_set_issuer_name(x, name) &&
	     X509_set_pubkey(x, key) &&
	     add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") == 0 &&
	     add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") == 0 &&
	     add_ext(x, x, NID_subject_key_identifier, "hash") == 0 &&
	     add_ext(x, x, NID_name_constraints, nc) == 0 && X509_sign(x, key, EVP_sha256()) > 0;
	X509_NAME_free(name);
	free(nc);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static X509 *make_leaf(aj_tls *t, const char *host)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	char san[AJ_HOST_MAX + 8];
	snprintf(san, sizeof(san), "%s:%s", is_ipv4(host) ? "IP" : "DNS", host);
	bool ok = x && name && X509_set_version(x, 2) && set_random_serial(x) == 0 &&
		  X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
		  X509_set1_notAfter(x, X509_get0_notAfter(t->ca)) &&
		  (strlen(host) > 64 ||
		   X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)host,
					      -1, -1, 0)) &&
		  X509_set_subject_name(x, name) &&
		  X509_set_issuer_name(x, X509_get_subject_name(t->ca)) &&
		  X509_set_pubkey(x, t->leaf_key) &&
		  add_ext(t->ca, x, NID_basic_constraints, "critical,CA:FALSE") == 0 &&
		  add_ext(t->ca, x, NID_key_usage, "critical,digitalSignature") == 0 &&
		  add_ext(t->ca, x, NID_ext_key_usage, "serverAuth") == 0 &&
		  add_ext(t->ca, x, NID_subject_alt_name, san) == 0 &&
		  add_ext(t->ca, x, NID_authority_key_identifier, "keyid") == 0 &&
		  X509_sign(x, t->ca_key, EVP_sha256()) > 0;
	X509_NAME_free(name);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* The leaf for host, made once (a reference the caller frees). */
static X509 *leaf_for(aj_tls *t, const char *host)
{
	pthread_mutex_lock(&t->lock);
	X509 *x = NULL;
	for (size_t i = 0; i < t->n_leaf && !x; i++)
		if (strcmp(t->leaf[i].host, host) == 0)
			x = t->leaf[i].cert;
	if (x) {
		X509_up_ref(x);
	} else if ((x = make_leaf(t, host)) && t->n_leaf < LEAF_CACHE) {
		snprintf(t->leaf[t->n_leaf].host, sizeof(t->leaf[0].host), "%s", host);
		t->leaf[t->n_leaf++].cert = x;
		X509_up_ref(x); /* the cache's and the caller's */
	}
	pthread_mutex_unlock(&t->lock);
	return x;
}

/* The client's SNI must name the host of its CONNECT (none: IP hosts). */
static int on_servername(SSL *s, int *alert, void *arg)
{
	sni_check *c = SSL_get_ex_data(s, sni_index);
	const char *sni = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name);
	if (!c || !sni)
		return SSL_TLSEXT_ERR_OK;
	aj_host h;
	if (aj_host_norm(sni, strlen(sni), &h, NULL) < 0 || strcmp(h.text, c->host) != 0) {
		c->mismatch = true;
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

/* Is the protocol (len bytes) among the client's ALPN offers in? */
static const unsigned char *alpn_find(const unsigned char *in, unsigned inlen, const char *proto)
{
	size_t len = strlen(proto);
	for (unsigned i = 0; i < inlen;) {
		unsigned n = in[i];
		if (i + 1 + n > inlen)
			break;
		if (n == len && memcmp(in + i + 1, proto, len) == 0)
			return in + i + 1;
		i += 1 + n;
	}
	return NULL;
}

/* ALPN: h2 when this connection may speak it (the server spoke h2 to
 * netd: aj_tls_accept_new) and the client offers it, else http/1.1; a
 * client that offers neither gets no ALPN and speaks HTTP/1.1 or fails */
static int on_alpn(SSL *s, const unsigned char **out, unsigned char *outlen,
		   const unsigned char *in, unsigned inlen, void *arg)
{
	(void)arg;
	sni_check *c = SSL_get_ex_data(s, sni_index);
	const unsigned char *p = c && c->h2 ? alpn_find(in, inlen, "h2") : NULL;
	if (p) {
		*out = p;
		*outlen = 2;
		return SSL_TLSEXT_ERR_OK;
	}
	if ((p = alpn_find(in, inlen, "http/1.1"))) {
		*out = p;
		*outlen = 8;
		return SSL_TLSEXT_ERR_OK;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

bool aj_tls_is_h2(SSL *s)
{
	const unsigned char *p = NULL;
	unsigned n = 0;
	SSL_get0_alpn_selected(s, &p, &n);
	return n == 2 && memcmp(p, "h2", 2) == 0;
}

static char *cert_pem(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL, *data;
	if (b && PEM_write_bio_X509(b, x)) {
		long n = BIO_get_mem_data(b, &data);
		if (n > 0 && (out = malloc((size_t)n + 1))) {
			memcpy(out, data, (size_t)n);
			out[n] = '\0';
		}
	}
	BIO_free(b);
	return out;
}

static int tls_fail(aj_error *err, const char *what)
{
	char detail[256] = "";
	unsigned long e = ERR_get_error();
	if (e)
		ERR_error_string_n(e, detail, sizeof(detail));
	ERR_clear_error();
	return aj_err(err, EPROTO, "HTTPS interception: %s%s%s", what, detail[0] ? ": " : "",
		      detail);
}

int aj_tls_new(const aj_policy *p, aj_tls **out, aj_error *err)
{
	pthread_once(&sni_once, sni_index_new);
	aj_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return aj_err(err, ENOMEM, "out of memory");
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	static const unsigned char alpn[] = "\x08http/1.1";
	if (sni_index < 0 || !(t->ca_key = EVP_EC_gen("P-256")) ||
	    !(t->leaf_key = EVP_EC_gen("P-256")))
		return tls_fail(err, "cannot make the sandbox's CA key");
	if (!(t->ca = make_ca(p, t->ca_key)) || !(t->ca_pem = cert_pem(t->ca)))
		return tls_fail(err, "cannot make the sandbox's CA certificate");
	if (!(t->srv = SSL_CTX_new(TLS_server_method())) ||
	    !SSL_CTX_set_min_proto_version(t->srv, TLS1_2_VERSION))
		return tls_fail(err, "cannot make the TLS context toward the sandbox");
	SSL_CTX_set_tlsext_servername_callback(t->srv, on_servername);
	SSL_CTX_set_alpn_select_cb(t->srv, on_alpn, NULL);
	SSL_CTX_set_session_cache_mode(t->srv, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(t->srv, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	if (!(t->cli = SSL_CTX_new(TLS_client_method())) ||
	    !SSL_CTX_set_min_proto_version(t->cli, TLS1_2_VERSION) ||
	    SSL_CTX_set_alpn_protos(t->cli, alpn, sizeof(alpn) - 1) != 0)
		return tls_fail(err, "cannot make the TLS context toward servers");
	SSL_CTX_set_verify(t->cli, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_options(t->cli, SSL_OP_NO_RENEGOTIATION);
	/* --upstream-ca, else the operator's (the service's environment) */
	const char *ca = p->upstream_ca ? p->upstream_ca : getenv("AGENTJAIL_UPSTREAM_CA");
	if (ca && ca[0]) {
		if (SSL_CTX_load_verify_locations(t->cli, ca, NULL) != 1) {
			tls_fail(err, p->upstream_ca ? "cannot load --upstream-ca"
						     : "cannot load AGENTJAIL_UPSTREAM_CA");
			aj_err_hint(err, "give a file of PEM certificates");
			return -EINVAL;
		}
	} else if (SSL_CTX_set_default_verify_paths(t->cli) != 1) {
		return tls_fail(err, "cannot load the host's trust store");
	}
	return 0;
}

int aj_tls_check_ca_file(const char *what, const char *path, aj_error *err)
{
	if (path[0] != '/') {
		aj_err(err, EINVAL, "%s '%s': expected an absolute path", what, path);
		aj_err_hint(err, "for example %s \"$PWD/ca.pem\"", what);
		return -EINVAL;
	}
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		aj_err(err, e, "%s %s: cannot read it", what, path);
		aj_err_hint(err, "give a readable file of PEM CA certificates");
		return -e;
	}
	size_t n = 0;
	const char *bad = NULL;
	X509 *x;
	while (!bad && (x = PEM_read_X509(f, NULL, NULL, NULL))) {
		n++;
		if (X509_check_ca(x) != 1) /* basicConstraints CA:TRUE (or a v1 root) */
			bad = "a certificate in it is not a CA's";
		X509_free(x);
	}
	fclose(f);
	ERR_clear_error();
	if (!bad && n == 0)
		bad = "no PEM certificate in it";
	if (bad) {
		aj_err(err, EINVAL, "%s %s: %s", what, path, bad);
		aj_err_hint(err, "give the PEM certificate(s) of the CA that issued the servers' "
				 "certificates (BEGIN CERTIFICATE, basicConstraints CA:TRUE)");
		return -EINVAL;
	}
	return 0;
}

void aj_tls_free(aj_tls *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_leaf; i++)
		X509_free(t->leaf[i].cert);
	SSL_CTX_free(t->srv);
	SSL_CTX_free(t->cli);
	X509_free(t->ca);
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->leaf_key);
	free(t->ca_pem);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int aj_tls_export_key(const aj_tls *t, const char *path, aj_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return aj_err(err, errno, "AGENTJAIL_CA_KEY_FILE %s: cannot create it", path);
	BIO *b = BIO_new_fd(fd, BIO_CLOSE);
	bool ok = b && PEM_write_bio_PrivateKey(b, t->ca_key, NULL, NULL, 0, NULL, NULL);
	if (b)
		BIO_free(b);
	else
		close(fd);
	return ok ? 0 : tls_fail(err, "cannot write AGENTJAIL_CA_KEY_FILE");
}

const char *aj_tls_ca_pem(const aj_tls *t)
{
	return t->ca_pem;
}

SSL *aj_tls_accept_new(aj_tls *t, const char *host, bool h2)
{
	X509 *leaf = leaf_for(t, host);
	SSL *s = leaf ? SSL_new(t->srv) : NULL;
	sni_check *c = s ? calloc(1, sizeof(*c)) : NULL;
	if (c) {
		snprintf(c->host, sizeof(c->host), "%s", host);
		c->h2 = h2;
	}
	if (!c || !SSL_set_ex_data(s, sni_index, c) || SSL_use_certificate(s, leaf) != 1 ||
	    SSL_use_PrivateKey(s, t->leaf_key) != 1) {
		if (s && !SSL_get_ex_data(s, sni_index))
			free(c);
		SSL_free(s);
		s = NULL;
	}
	X509_free(leaf);
	return s;
}

bool aj_tls_sni_mismatch(SSL *s)
{
	sni_check *c = SSL_get_ex_data(s, sni_index);
	return c && c->mismatch;
}

SSL *aj_tls_connect_new(aj_tls *t, const char *host, bool is_ip, bool h2)
{
	static const unsigned char both[] = "\x02h2\x08http/1.1";
	SSL *s = SSL_new(t->cli);
	if (!s)
		return NULL;
	bool ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), host) == 1
			: SSL_set_tlsext_host_name(s, host) == 1 && SSL_set1_host(s, host) == 1;
	if (ok && h2)
		ok = SSL_set_alpn_protos(s, both, sizeof(both) - 1) == 0;
	if (!ok) {
		SSL_free(s);
		return NULL;
	}
	return s;
}
