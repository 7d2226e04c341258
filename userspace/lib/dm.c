// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The dm-chj target through libdevmapper: table, status, message, create,
 * remove.  Never runs dmsetup.  Without udev (the test VM has none)
 * libdevmapper is told not to wait for it and makes /dev/mapper nodes itself
 * when a cookie is waited for.
 */
#include <errno.h>
#include <fcntl.h>
#include <libdevmapper.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

/* libdevmapper's last error, to explain a failed task in our message. */
static char dm_last[256];

static void dm_log(int level, const char *file, int line, int dm_errno,
		   const char *f, ...)
{
	va_list ap;

	(void)file;
	(void)line;
	(void)dm_errno;
	if ((level & 7) > 3)	/* keep _LOG_FATAL and _LOG_ERR only */
		return;
	va_start(ap, f);
	vsnprintf(dm_last, sizeof(dm_last), f, ap);
	va_end(ap);
}

void chj_dm_init(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	if (access("/run/udev/control", F_OK))
		dm_udev_set_sync_support(0);
	dm_log_with_errno_init(dm_log);
}

/*
 * Why device-mapper cannot be used at all, or NULL: no control node, or the
 * kernel has not registered its misc device (a control node left in /dev,
 * no dm_mod loaded).  libdevmapper only says "Incompatible libdevmapper ...
 * and kernel driver (unknown version)" then.
 */
static const char *dm_missing(void)
{
	char line[128];
	FILE *f;
	int found = 0;

	if (access(CHJ_DM_CONTROL, F_OK))
		return " (no " CHJ_DM_CONTROL ": is device-mapper in the kernel? try modprobe dm_mod)";
	f = fopen("/proc/misc", "re");
	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " device-mapper\n") != NULL;
	fclose(f);
	return found ? NULL :
	       " (device-mapper is not in the running kernel, see /proc/misc: try modprobe dm_mod)";
}

static int dm_fail(struct chj_error *e, const char *name, const char *what)
{
	const char *hint = dm_missing();

	return chj_err(e, CHJ_ERR_DM, "%s: %s failed%s%s%s", name, what,
		       dm_last[0] ? ": " : "", dm_last, hint ? hint : "");
}

/* /dev/kmsg positioned after the last record, or -1: opened before a task. */
static int kmsg_open_end(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * The reason the kernel gave for refusing a table (its ti->error): the
 * newest "device-mapper: table: ...: chj: ..." record logged since fd was
 * opened; empty when there is none or the log cannot be read.
 */
static void kernel_reason(int fd, char *buf, size_t len)
{
	static const char tab[] = "device-mapper: table:", tgt[] = "device-mapper: " CHJ_TARGET_NAME ": ";
	char rec[1024], detail[256] = "";
	ssize_t n;

	buf[0] = 0;
	if (fd < 0)
		return;
	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		char *msg, *p;

		if (n <= 0)
			continue;	/* EPIPE: records overwritten, go on */
		rec[n] = 0;
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg[strcspn(msg, "\n")] = 0;
		/* The target's own detail line, e.g. the size it needs. */
		if ((p = strstr(msg, tgt)))
			snprintf(detail, sizeof(detail), "%s", p + strlen(tgt));
		if (!strstr(msg, tab) || !(p = strstr(msg, ": " CHJ_TARGET_NAME ": ")))
			continue;
		p += strlen(": " CHJ_TARGET_NAME ": ");
		snprintf(buf, len, "%s%s%s", p, detail[0] ? "; " : "", detail);
	}
}

/* A create failed: say what the kernel said, if it said it. */
static int table_fail(struct chj_error *e, const char *name, const char *what,
		      int kfd)
{
	char why[256];

	kernel_reason(kfd, why, sizeof(why));
	if (!why[0])
		return dm_fail(e, name, what);
	return chj_err(e, CHJ_ERR_DM, "%s: the kernel refused the table: %s", name, why);
}

static struct dm_task *new_task(int type, const char *name)
{
	struct dm_task *dmt;

	chj_dm_init();
	dm_last[0] = 0;
	dmt = dm_task_create(type);
	if (dmt && name && !dm_task_set_name(dmt, name)) {
		dm_task_destroy(dmt);
		return NULL;
	}
	return dmt;
}

/* Does NAME exist?  1 yes, 0 no, < 0 error. */
static int dm_exists(const char *name, struct chj_error *e)
{
	struct dm_task *dmt = new_task(DM_DEVICE_INFO, name);
	struct dm_info info;
	int r;

	if (!dmt)
		return -dm_fail(e, name, "device-mapper info");
	if (!dm_task_run(dmt) || !dm_task_get_info(dmt, &info))
		r = -dm_fail(e, name, "device-mapper info");
	else
		r = info.exists;
	dm_task_destroy(dmt);
	return r;
}

/* "253:4" or a path to a block device. */
static int parse_dev(const char *s, dev_t *dev)
{
	unsigned maj, min;
	struct stat st;
	int n = 0;

	if (sscanf(s, "%u:%u%n", &maj, &min, &n) == 2 && !s[n]) {
		*dev = makedev(maj, min);
		return 0;
	}
	if (stat(s, &st) || !S_ISBLK(st.st_mode))
		return -1;
	*dev = st.st_rdev;
	return 0;
}

int chj_parse_table_params(const char *params, struct chj_dm_table *t,
			   struct chj_error *e)
{
	char meta[256], origin[256], word[64];
	unsigned long long rs;
	const char *p;
	unsigned nf = 0;
	int n = 0, n2 = 0;

	if (sscanf(params, "%255s %255s %llu%n %u%n", meta, origin, &rs, &n, &nf, &n2) < 3 ||
	    parse_dev(meta, &t->metadata) || parse_dev(origin, &t->origin) ||
	    !chj_region_sectors_valid(rs))
		return chj_err(e, CHJ_ERR_INVAL, "table \"%s\": not a chj table", params);
	t->region_sectors = rs;
	t->chunk_sectors = 0;
	t->mark_ahead = 0;
	t->other_features[0] = 0;
	p = params + (n2 ? n2 : n);
	/*
	 * Feature words: chunk_sectors N, mark_ahead N, and any this library
	 * does not know, kept.
	 */
	for (unsigned i = 0; n2 && i < nf; i++) {
		unsigned long long v;
		size_t used = strlen(t->other_features);

		if (sscanf(p, "%63s%n", word, &n) != 1)
			return chj_err(e, CHJ_ERR_INVAL, "table \"%s\": %u feature words announced, fewer given",
				       params, nf);
		p += n;
		if (!strcmp(word, "mark_ahead") && i + 1 < nf &&
		    sscanf(p, "%llu%n", &v, &n) == 1 && v <= UINT32_MAX) {
			t->mark_ahead = v;
			p += n;
			i++;
		} else if (!strcmp(word, "chunk_sectors") && i + 1 < nf &&
			   sscanf(p, "%llu%n", &v, &n) == 1 && v && v <= UINT32_MAX) {
			t->chunk_sectors = v;
			p += n;
			i++;
		} else if (snprintf(t->other_features + used, sizeof(t->other_features) - used,
				    "%s%s", used ? " " : "", word) >= (int)(sizeof(t->other_features) - used)) {
			return chj_err(e, CHJ_ERR_INVAL, "table \"%s\": feature words too long", params);
		}
	}
	return CHJ_OK;
}

int chj_parse_status_params(const char *params, struct chj_dm_status *s,
			    struct chj_error *e)
{
	unsigned long long v[7];
	unsigned rs;
	int n = 0;

	memset(s, 0, sizeof(*s));
	if (sscanf(params, "%u %llu %llu %llu/%llu %llu/%llu %15s%n", &rs,
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], s->mode, &n) != 8 ||
	    params[n + strspn(params + n, " \n")] ||
	    (strcmp(s->mode, "ok") && strcmp(s->mode, "fail")))
		return chj_err(e, CHJ_ERR_INVAL, "status \"%s\": not a chj status line",
			       params);
	s->region_sectors = rs;
	s->current_epoch = v[0];
	s->oldest_epoch = v[1];
	s->marked = v[2];
	s->nr_regions = v[3];
	s->journal_used = v[4];
	s->journal_blocks = v[5];
	s->failed = !strcmp(s->mode, "fail");
	return CHJ_OK;
}

/* Run TABLE or STATUS on NAME; *params gets the chj target's (strdup). */
static int get_params(const char *name, int type, uint64_t *start,
		      uint64_t *len, char **params, struct chj_error *e)
{
	struct dm_task *dmt;
	char *ttype = NULL, *p = NULL;
	uint64_t s, l;
	int r, rc = CHJ_OK;
	void *next;

	r = dm_exists(name, e);
	if (r <= 0)
		return r < 0 ? -r : chj_err(e, CHJ_ERR_NOT_FOUND,
					    "%s: no such device", name);
	dmt = new_task(type, name);
	if (!dmt || !dm_task_run(dmt)) {
		rc = dm_fail(e, name, type == DM_DEVICE_TABLE ? "reading the table" :
			     "reading the status");
		goto out;
	}
	next = dm_get_next_target(dmt, NULL, &s, &l, &ttype, &p);
	if (!ttype || strcmp(ttype, CHJ_TARGET_NAME) || next) {
		rc = chj_err(e, CHJ_ERR_INVAL, "%s: not a chj device", name);
		goto out;
	}
	*start = s;
	*len = l;
	*params = strdup(p ? p : "");
	if (!*params)
		rc = chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", name);
out:
	if (dmt)
		dm_task_destroy(dmt);
	return rc;
}

int chj_dm_get_table(const char *name, struct chj_dm_table *t,
		     struct chj_error *e)
{
	char *p = NULL;
	int rc = get_params(name, DM_DEVICE_TABLE, &t->start, &t->len, &p, e);

	if (!rc)
		rc = chj_parse_table_params(p, t, e);
	free(p);
	return rc;
}

int chj_dm_status(const char *name, struct chj_dm_status *s,
		  struct chj_error *e)
{
	uint64_t start, len;
	char *p = NULL;
	int rc = get_params(name, DM_DEVICE_STATUS, &start, &len, &p, e);

	if (!rc)
		rc = chj_parse_status_params(p, s, e);
	free(p);
	return rc;
}

int chj_dm_message(const char *name, const char *msg, char **response,
		   struct chj_error *e)
{
	struct dm_task *dmt = new_task(DM_DEVICE_TARGET_MSG, name);
	const char *r;
	int rc = CHJ_OK;

	if (response)
		*response = NULL;
	if (!dmt || !dm_task_set_sector(dmt, 0) || !dm_task_set_message(dmt, msg) ||
	    !dm_task_run(dmt)) {
		rc = dm_exists(name, NULL) == 0 ?
		     chj_err(e, CHJ_ERR_NOT_FOUND, "%s: no such device", name) :
		     dm_fail(e, name, msg);
		goto out;
	}
	r = dm_task_get_message_response(dmt);
	if (response && r && !(*response = strdup(r)))
		rc = chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", name);
out:
	if (dmt)
		dm_task_destroy(dmt);
	return rc;
}

int chj_dm_checkpoint(const char *name, uint64_t *new_epoch,
		      struct chj_error *e)
{
	struct chj_dm_table t;
	char *resp = NULL;
	int rc = chj_dm_get_table(name, &t, e);	/* only message chj devices */

	if (!rc)
		rc = chj_dm_message(name, "checkpoint", &resp, e);
	if (!rc) {
		if (resp)
			resp[strcspn(resp, " \n")] = 0;
		if (!resp || chj_parse_u64(resp, new_epoch))
			rc = chj_err(e, CHJ_ERR_DM, "%s: checkpoint answered \"%s\", not an epoch",
				     name, resp ? resp : "");
	}
	free(resp);
	return rc;
}

/* Number of words in s. */
static unsigned count_words(const char *s)
{
	unsigned n = 0;

	for (const char *p = s; *p; p++)
		n += *p != ' ' && (p == s || p[-1] == ' ');
	return n;
}

int chj_dm_table_params(const struct chj_dm_table *t, char *buf, size_t len)
{
	unsigned nf = (t->chunk_sectors ? 2 : 0) + (t->mark_ahead ? 2 : 0) +
		      count_words(t->other_features);
	int n = snprintf(buf, len, "%u:%u %u:%u %u", major(t->metadata), minor(t->metadata),
			 major(t->origin), minor(t->origin), t->region_sectors);

	if (nf && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " %u", nf);
	/* dm-chj's order: chunk_sectors first. */
	if (t->chunk_sectors && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " chunk_sectors %u", t->chunk_sectors);
	if (t->mark_ahead && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " mark_ahead %u", t->mark_ahead);
	if (t->other_features[0] && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " %s", t->other_features);
	return n >= 0 && (size_t)n < len ? 0 : -1;
}

/*
 * The chunk_sectors dm-chj runs a table with: the feature's, or its
 * default, at least one region (it echoes the feature back only when that
 * differs from 8192, so a table without it can read back with it).
 */
static uint32_t table_chunk_sectors(const struct chj_dm_table *t, uint32_t rs)
{
	if (t->chunk_sectors)
		return t->chunk_sectors;
	return rs > CHJ_DEFAULT_CHUNK_SECTORS ? rs : CHJ_DEFAULT_CHUNK_SECTORS;
}

static int same_table(const struct chj_dm_table *a, const struct chj_dm_table *want)
{
	return a->start == want->start && a->len == want->len &&
	       a->metadata == want->metadata && a->origin == want->origin &&
	       (!want->region_sectors || a->region_sectors == want->region_sectors) &&
	       table_chunk_sectors(a, a->region_sectors) ==
	       table_chunk_sectors(want, a->region_sectors) &&
	       a->mark_ahead == want->mark_ahead &&
	       !strcmp(a->other_features, want->other_features);
}

/* Run a task that changes devices, then let libdevmapper make the nodes. */
static int run_with_nodes(struct dm_task *dmt)
{
	uint32_t cookie = 0;
	int ok;

	if (!dm_task_set_cookie(dmt, &cookie, 0))
		return 0;
	ok = dm_task_run(dmt);
	(void)dm_udev_wait(cookie);
	return ok;
}

int chj_dm_create(const char *name, const struct chj_dm_table *t,
		  int *existed, struct chj_error *e)
{
	struct chj_dm_table cur;
	struct dm_task *dmt;
	char params[256];
	int r = dm_exists(name, e), rc = CHJ_OK, kfd;

	*existed = 0;
	if (r < 0)
		return -r;
	if (r) {
		rc = chj_dm_get_table(name, &cur, e);
		if (rc == CHJ_ERR_INVAL)
			return chj_err(e, CHJ_ERR_EXISTS, "%s: exists and is not a chj device", name);
		if (rc)
			return rc;
		if (!same_table(&cur, t))
			return chj_err(e, CHJ_ERR_EXISTS,
				       "%s: exists with a different table (remove it first)", name);
		*existed = 1;
		return CHJ_OK;
	}
	if (chj_dm_table_params(t, params, sizeof(params)))
		return chj_err(e, CHJ_ERR_INVAL, "%s: table too long", name);
	kfd = kmsg_open_end();
	dmt = new_task(DM_DEVICE_CREATE, name);
	/* CREATE with a table: libdevmapper creates, loads and resumes. */
	if (!dmt || !dm_task_add_target(dmt, t->start, t->len, CHJ_TARGET_NAME, params) ||
	    !dm_task_set_add_node(dmt, DM_ADD_NODE_ON_CREATE) || !run_with_nodes(dmt))
		rc = table_fail(e, name, "creating the device", kfd);
	if (dmt)
		dm_task_destroy(dmt);
	if (kfd >= 0)
		close(kfd);
	return rc;
}

int chj_dm_remove(const char *name, struct chj_error *e)
{
	struct chj_dm_table t;
	struct dm_task *dmt;
	int rc = chj_dm_get_table(name, &t, e);	/* refuse non-chj devices */

	if (rc)
		return rc;
	dmt = new_task(DM_DEVICE_REMOVE, name);
	if (!dmt || !dm_task_retry_remove(dmt) || !run_with_nodes(dmt))
		rc = dm_fail(e, name, "removing the device (is it open or mounted?)");
	if (dmt)
		dm_task_destroy(dmt);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void chj_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int chj_dm_list(char ***names, size_t *n, struct chj_error *e)
{
	struct dm_task *dmt = new_task(DM_DEVICE_LIST, NULL);
	struct dm_names *nm;
	char **v = NULL;
	size_t cnt = 0;
	int rc = CHJ_OK;

	if (!dmt || !dm_task_run(dmt) || !(nm = dm_task_get_names(dmt))) {
		rc = dm_fail(e, "device-mapper", "listing devices");
		goto out;
	}
	for (unsigned next = nm->dev ? 1 : 0; next; nm = (void *)((char *)nm + next)) {
		struct chj_dm_table t;
		char **tmp;

		next = nm->next;
		if (chj_dm_get_table(nm->name, &t, NULL))
			continue;	/* not chj, or gone meanwhile */
		tmp = realloc(v, (cnt + 1) * sizeof(*v));
		if (!tmp || !(tmp[cnt] = strdup(nm->name))) {
			v = tmp ? tmp : v;
			rc = chj_err(e, CHJ_ERR_NOMEM, "device list: out of memory");
			break;
		}
		v = tmp;
		cnt++;
	}
out:
	if (dmt)
		dm_task_destroy(dmt);
	if (rc) {
		chj_free_names(v, cnt);
		return rc;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_names);
	*names = v;
	*n = cnt;
	return CHJ_OK;
}

int chj_devnode(dev_t dev, char *buf, size_t len, struct chj_error *e)
{
	char path[128], line[256];
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8))
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(buf, len, "/dev/%s", line + 8);
		if (!stat(buf, &st) && S_ISBLK(st.st_mode) && st.st_rdev == dev) {
			fclose(f);
			return CHJ_OK;
		}
	}
	if (f)
		fclose(f);
	return chj_err(e, CHJ_ERR_NOT_FOUND, "device %u:%u: no device node in /dev",
		       major(dev), minor(dev));
}

/*
 * Ask the live target to write its exact map ("sync"), so that the bitmap
 * holds every write issued before now and a reader need not count the
 * marked chunks whole.  The target's current epoch, or 0 when it could not
 * (a module without the message, fail mode): then they count whole.
 */
static uint64_t sync_exact(const char *dm_name)
{
	char *resp = NULL;
	uint64_t epoch = 0;

	if (chj_dm_message(dm_name, "sync", &resp, NULL))
		return 0;
	if (!resp || chj_parse_u64(resp, &epoch))
		epoch = 0;
	free(resp);
	return epoch;
}

int chj_meta_open_live(struct chj_meta **mp, const char *dm_name,
		       struct chj_error *e)
{
	struct chj_dm_table t;
	char node[200];
	int rc = chj_dm_get_table(dm_name, &t, e);

	if (!rc)
		rc = chj_devnode(t.metadata, node, sizeof(node), e);
	if (!rc)
		rc = chj_meta_open(mp, node, 0, e);
	if (!rc)
		(*mp)->synced_epoch = sync_exact(dm_name);
	return rc;
}
