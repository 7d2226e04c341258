// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Who may read chj export's snapshot.  The export is every byte of a disk:
 * a TCP listener beyond loopback must have TLS (qemu-nbd's tls-creds-x509
 * or tls-creds-psk objects, optionally an authz-list of client DNs) or the
 * caller's explicit --insecure-plain; the Unix socket is the owner's only
 * (or a group's) whatever the umask.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export_net.h"

static const char *const x509_files[] = { "ca-cert.pem", "server-cert.pem", "server-key.pem" };

int export_split_tcp(const char *tcp, char *host, size_t hs, char *port, size_t ps)
{
	const char *colon = strrchr(tcp, ':');
	size_t n;

	if (!colon || !colon[1])
		return -1;
	n = colon - tcp;
	/* [v6]:port: the brackets are the URI's, not the address's */
	if (n > 1 && tcp[0] == '[' && tcp[n - 1] == ']')
		tcp++, n -= 2;
	if (n >= hs || strlen(colon + 1) >= ps || memchr(tcp, '[', n) || memchr(tcp, ']', n))
		return -1;
	memcpy(host, tcp, n);
	host[n] = 0;
	strcpy(port, colon + 1);
	return 0;
}

static int sa_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/*
 * 1 if every address HOST names is a loopback one (qemu-nbd binds the
 * first that works), 0 if one is not (an empty HOST is every address),
 * -1 if HOST does not resolve (said).
 */
static int host_loopback(const char *host)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *r;
	int rc;

	if (!*host)
		return 0;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc) {
		fprintf(stderr, "chj: %s: cannot resolve: %s\n", host, gai_strerror(rc));
		return -1;
	}
	for (r = res; r && sa_loopback(r->ai_addr); r = r->ai_next)
		;
	freeaddrinfo(res);
	return !r;
}

static int parse_group(const char *s, gid_t *gid)
{
	struct group *g = getgrnam(s);
	char *end;
	unsigned long v;

	if (g) {
		*gid = g->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || v >= (gid_t)-1)
		return -1;
	*gid = v;
	return 0;
}

static int check_plain_tcp(const struct chj_cmd *c, const struct export_net *n)
{
	char host[256], port[32];
	int lo;

	if (export_split_tcp(n->tcp, host, sizeof(host), port, sizeof(port)))
		return cli_usage(c, "--tcp %s: not HOST:PORT", n->tcp);
	if (n->tls_creds || n->tls_psk || n->insecure_plain)
		return 0;
	lo = host_loopback(host);
	if (lo < 0)
		return EXIT_ERROR;
	if (!lo)
		return cli_usage(c, "--tcp %s: %s, without TLS: anyone who can reach it would read "
				 "the whole snapshot, unencrypted and unauthenticated; give "
				 "--tls-creds DIR or --tls-psk FILE, or --insecure-plain to accept that",
				 n->tcp, *host ? "not a loopback address" : "every address (HOST empty)");
	return 0;
}

static int check_psk_name(const struct chj_cmd *c, const char *file)
{
	const char *base = strrchr(file, '/');

	base = base ? base + 1 : file;
	if (strcmp(base, "keys.psk"))
		return cli_usage(c, "--tls-psk %s: qemu-nbd reads the keys from DIR/keys.psk: "
				 "name the file keys.psk", file);
	return 0;
}

int export_net_check(const struct chj_cmd *c, struct export_net *n)
{
	int rc;

	if (!n->socket == !n->tcp)
		return cli_usage(c, "give one of --socket PATH and --tcp HOST:PORT");
	if (n->tls_creds && n->tls_psk)
		return cli_usage(c, "give one of --tls-creds DIR and --tls-psk FILE");
	if (n->n_authz && !n->tls_creds)
		return cli_usage(c, "--tls-authz: needs --tls-creds (x509 client certificates; "
				 "qemu-nbd does not check PSK usernames against it)");
	if (n->insecure_plain && (n->tls_creds || n->tls_psk))
		return cli_usage(c, "--insecure-plain: contradicts --tls-creds and --tls-psk");
	if (n->insecure_plain && !n->tcp)
		return cli_usage(c, "--insecure-plain: only for --tcp");
	if (n->socket_group && !n->socket)
		return cli_usage(c, "--socket-group: only for --socket");
	if (n->socket_group && parse_group(n->socket_group, &n->gid))
		return cli_usage(c, "--socket-group %s: no such group", n->socket_group);
	if (n->tls_psk && (rc = check_psk_name(c, n->tls_psk)))
		return rc;
	return n->tcp ? check_plain_tcp(c, n) : 0;
}

static int readable(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s%s%s", dir, *name ? "/" : "", name) >= sizeof(path)) {
		fprintf(stderr, "chj: %s: path too long\n", dir);
		return -1;
	}
	if (access(path, R_OK)) {
		fprintf(stderr, "chj: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int export_net_files(const struct export_net *n)
{
	if (n->tls_psk)
		return readable(n->tls_psk, "") ? EXIT_ERROR : 0;
	if (!n->tls_creds)
		return 0;
	for (size_t i = 0; i < sizeof(x509_files) / sizeof(*x509_files); i++)
		if (readable(n->tls_creds, x509_files[i]))
			return EXIT_ERROR;
	return 0;
}

/* JSON for --object: paths and DNs need no QEMU option escaping there. */
static char *creds_json(const struct export_net *n)
{
	char dir[PATH_MAX], *s = NULL, *slash;
	size_t len;
	FILE *f;

	if (!realpath(n->tls_creds ? n->tls_creds : n->tls_psk, dir)) {
		fprintf(stderr, "chj: %s: %s\n", n->tls_creds ? n->tls_creds : n->tls_psk,
			strerror(errno));
		return NULL;
	}
	if (n->tls_psk && (slash = strrchr(dir, '/')))
		slash[slash == dir] = 0;	/* the directory holding keys.psk */
	f = open_memstream(&s, &len);
	if (!f)
		return NULL;
	fprintf(f, "{\"qom-type\":\"%s\",\"id\":\"chjtls\",\"endpoint\":\"server\",\"dir\":",
		n->tls_creds ? "tls-creds-x509" : "tls-creds-psk");
	chj_json_str(f, dir);
	/* x509: a client certificate signed by the CA is required */
	fputs(n->tls_creds ? ",\"verify-peer\":true}" : "}", f);
	fclose(f);
	return s;
}

static char *authz_json(const struct export_net *n)
{
	char *s = NULL;
	size_t len;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	fputs("{\"qom-type\":\"authz-list\",\"id\":\"chjauthz\",\"policy\":\"deny\",\"rules\":[", f);
	for (int i = 0; i < n->n_authz; i++) {
		fputs(i ? ",{\"match\":" : "{\"match\":", f);
		chj_json_str(f, n->authz[i]);
		fputs(",\"policy\":\"allow\",\"format\":\"exact\"}", f);
	}
	fputs("]}", f);
	fclose(f);
	return s;
}

int export_net_objects(struct export_net *n, char **argv, int *argc)
{
	if (!n->tls_creds && !n->tls_psk)
		return 0;
	n->obj_creds = creds_json(n);
	if (!n->obj_creds)
		return EXIT_ERROR;
	if (n->n_authz && !(n->obj_authz = authz_json(n)))
		return EXIT_ERROR;
	/* the objects first: qemu-nbd looks their ids up as it parses */
	argv[(*argc)++] = "--object";
	argv[(*argc)++] = n->obj_creds;
	if (n->obj_authz) {
		argv[(*argc)++] = "--object";
		argv[(*argc)++] = n->obj_authz;
	}
	argv[(*argc)++] = "--tls-creds=chjtls";
	if (n->obj_authz)
		argv[(*argc)++] = "--tls-authz=chjauthz";
	return 0;
}

void export_net_free(struct export_net *n)
{
	free(n->obj_creds);
	free(n->obj_authz);
	n->obj_creds = n->obj_authz = NULL;
}

int export_socket_perms(const struct export_net *n)
{
	struct stat st;

	if (!n->socket || !n->socket_group)
		return 0;	/* created 0600 (chj export sets the umask) */
	errno = 0;
	if (lstat(n->socket, &st) || !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "chj: %s: %s\n", n->socket, errno ? strerror(errno) : "not a socket");
		return EXIT_ERROR;
	}
	if (lchown(n->socket, -1, n->gid) || chmod(n->socket, 0660)) {
		fprintf(stderr, "chj: %s: %s\n", n->socket, strerror(errno));
		return EXIT_ERROR;
	}
	return 0;
}

void export_print_uri(const struct export_net *n, const char *export_name)
{
	const char *s = n->tls_creds || n->tls_psk ? "s" : "";
	char name[256] = "localhost";

	if (n->socket) {
		printf("nbd%s+unix:///%s?socket=%s\n", s, export_name, n->socket);
	} else if (n->tcp[0] == ':') {
		/* every address: the name others reach this machine by */
		if (gethostname(name, sizeof(name) - 1))
			strcpy(name, "localhost");
		name[sizeof(name) - 1] = 0;
		printf("nbd%s://%s%s/%s\n", s, name, n->tcp, export_name);
	} else {
		printf("nbd%s://%s/%s\n", s, n->tcp, export_name);
	}
	fflush(stdout);
}
