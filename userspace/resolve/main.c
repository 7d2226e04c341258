// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * chj-resolve: the files of the filesystem on a dm-chj device whose content
 * or metadata may have changed since an epoch.  See chj-resolve(8) and
 * docs/resolve.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "resolve.h"

static void count_results(struct resolver *r)
{
	for (size_t i = 0; i < r->res.cap; i++) {
		const struct item *it = r->res.tab[i];

		if (!it || !it->reasons)
			continue;
		if (!it->npaths) {
			/* Inode slots listed only for their block are mostly
			 * free ones: not worth a mention. */
			if (it->reasons & ~(RSN_INODE | RSN_JOURNAL))
				r->st.unreachable++;
			continue;
		}
		r->st.inodes_listed++;
		for (unsigned b = 0; b < RSN_NR; b++)
			if (it->reasons & (1u << b))
				r->st.by_reason[b]++;
	}
}

static int resolve_run(struct resolver *r)
{
	double t;
	int rc;

	rc = target_open(r);
	if (!rc)
		rc = target_find_mount(r);
	if (rc)
		return rc;
	r->method = method_for(r->fstype);
	if (!r->method)
		return rx_fail(r, RX_FULL_SCAN, "%s: filesystem type %s is not supported",
			       r->dev_path, r->fstype);
	/*
	 * Dirty data and metadata reach the device, and so the change map,
	 * only when written back: sync first, then read the map.  A target in
	 * fail mode errors writes, so the sync fails there: say why.
	 */
	rc = target_check_mode(r);
	if (rc)
		return rc;
	t = now_sec();
	if (syncfs(r->mnt_fd)) {
		int e = errno;

		rc = target_check_mode(r);
		return rc ? rc : rx_fail(r, RX_ERROR, "syncfs %s: %s", r->mnt, strerror(e));
	}
	r->st.phase[PH_SYNC] = now_sec() - t;
	if (r->method->before_map && (rc = r->method->before_map(r)))
		return rc;
	t = now_sec();
	rc = target_read_changes(r);
	r->st.phase[PH_MAP] = now_sec() - t;
	if (rc)
		return rc;
	rc = r->method->resolve(r);
	progress_done(r);
	if (rc)
		return rc;
	count_results(r);
	/* The rule, in one place (settle.c): nothing changed is dropped with exit 0. */
	r->st.settle_done = 1;
	r->st.verdict = settle(&r->st.tally, settle_table(), r->st.settled, sizeof(r->st.settled));
	if (r->st.verdict == SETTLE_FULL_SCAN)
		return rx_fail(r, RX_FULL_SCAN, "%s", r->st.settled);
	t = now_sec();
	rc = output_results(r, stdout);
	if (!rc && fflush(stdout))
		rc = rx_fail(r, RX_ERROR, "write error on stdout: %s", strerror(errno));
	r->st.phase[PH_OUTPUT] = now_sec() - t;
	return rc;
}

int main(int argc, char **argv)
{
	static char obuf[1 << 16];
	struct resolver r;
	int rc;

	/* 32 MiB: about twice the heap a steady state at 1M files touches
	 * (peak RSS 20 MB, libraries included); a larger run grows it on. */
	heap_hugepages(32 << 20);
	memset(&r, 0, sizeof(r));
	r.dev_fd = r.mnt_fd = -1;
	rs_init(&r.changed);
	res_init(&r.res);
	rc = resolve_parse_args(&r, argc, argv);
	if (rc)
		return rc < 0 ? (fflush(stdout) ? RX_ERROR : RX_OK) : rc;
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	r.tty = isatty(2);
	r.progress_after = -1;
	r.t0 = now_sec();
	rc = resolve_run(&r);
	progress_done(&r);
	if (rc == RX_FULL_SCAN)
		fprintf(stderr, "chj-resolve: full scan needed: %s\n", r.err);
	else if (rc)
		fprintf(stderr, "chj-resolve: %s\n", r.err);
	if (r.want_stats && (rc == RX_OK || r.mnt))
		stats_print(&r, stderr);
	if (r.method && r.method->release)
		r.method->release(&r);
	res_free(&r.res);
	rs_free(&r.changed);
	free(r.mnt);
	free(r.mnt_root);
	if (r.dev_fd >= 0)
		close(r.dev_fd);
	if (r.mnt_fd >= 0)
		close(r.mnt_fd);
	return rc;
}
