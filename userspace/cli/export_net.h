/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * chj export's access control: TLS credentials for qemu-nbd, the refusal of
 * plain TCP beyond loopback, the Unix socket's owner and mode, the URI.
 */
#ifndef CHJ_EXPORT_NET_H
#define CHJ_EXPORT_NET_H

#include <sys/types.h>

#include "cli.h"

#define EXPORT_MAX_AUTHZ 64	/* --tls-authz DNs */

struct export_net {
	const char *socket, *tcp;
	const char *tls_creds, *tls_psk, *socket_group;
	const char *authz[EXPORT_MAX_AUTHZ];
	int n_authz, insecure_plain;
	gid_t gid;
	/* qemu-nbd's --object arguments (JSON), built by export_net_objects */
	char *obj_creds, *obj_authz;
};

/* HOST:PORT or [V6]:PORT into host (brackets dropped) and port; 0 or -1. */
int export_split_tcp(const char *tcp, char *host, size_t hs, char *port, size_t ps);
/*
 * After the options: the combinations allowed, the group, and plain TCP
 * only on loopback (or with --insecure-plain).  0, or an exit code: the
 * usage exit code for an argument refused, EXIT_ERROR if HOST does not resolve.
 */
int export_net_check(const struct chj_cmd *c, struct export_net *n);
/* The credential files are there and readable: 0, or EXIT_ERROR (said). */
int export_net_files(const struct export_net *n);
/* Append qemu-nbd's TLS arguments to argv (at most 6); 0 or EXIT_ERROR. */
int export_net_objects(struct export_net *n, char **argv, int *argc);
void export_net_free(struct export_net *n);
/* The socket qemu-nbd made: owner-only, or owner and --socket-group. */
int export_socket_perms(const struct export_net *n);
/* Print the URI a client connects to (nbds:// with TLS). */
void export_print_uri(const struct export_net *n, const char *export_name);

#endif /* CHJ_EXPORT_NET_H */
