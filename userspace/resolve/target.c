// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The tracked device: which dm-chj device DEVICE is, its status, the
 * regions changed since the epoch (through libchj), and the filesystem
 * mounted on it (from /proc/self/mountinfo and libblkid).
 */
#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <libmount.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "libchj.h"
#include "resolve.h"

/* Name of the dm device dev from sysfs, or -1 if dev is not one. */
static int dm_name_of(dev_t dev, char *name, size_t len)
{
	char p[128];
	FILE *f;
	int ok;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/dm/name", major(dev), minor(dev));
	f = fopen(p, "r");
	if (!f)
		return -1;
	ok = fgets(name, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	name[strcspn(name, "\n")] = 0;
	return name[0] ? 0 : -1;
}

/*
 * The test hook: changed ranges come from a file (docs/testing.md).  Only in
 * chj-resolve-test: it skips the device-mapper and fail-mode checks.
 */
static const char *changes_file(void)
{
	const char *f = test_hook("CHJ_RESOLVE_CHANGES");

	return f && *f ? f : NULL;
}

int target_open(struct resolver *r)
{
	struct stat st;
	const char *arg = r->device_arg;
	uint64_t bytes = 0;
	int lbs = 512;

	if (!strchr(arg, '/')) {
		/* A bare dm name. */
		if (strlen(arg) >= sizeof(r->dm_name))
			return rx_fail(r, RX_USAGE, "%s: device name too long", arg);
		snprintf(r->dev_path, sizeof(r->dev_path), "/dev/mapper/%s", arg);
	} else {
		if (strlen(arg) >= sizeof(r->dev_path))
			return rx_fail(r, RX_USAGE, "%s: path too long", arg);
		snprintf(r->dev_path, sizeof(r->dev_path), "%s", arg);
	}
	if (stat(r->dev_path, &st))
		return rx_fail(r, RX_ERROR, "%s: %s", r->dev_path, strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return rx_fail(r, RX_ERROR, "%s: not a block device", r->dev_path);
	r->devno = st.st_rdev;
	if (!changes_file()) {
		if (dm_name_of(r->devno, r->dm_name, sizeof(r->dm_name)))
			return rx_fail(r, RX_ERROR, "%s: not a device-mapper device", r->dev_path);
	}
	r->dev_fd = open(r->dev_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (r->dev_fd < 0)
		return rx_fail(r, RX_ERROR, "%s: %s", r->dev_path, strerror(errno));
	if (ioctl(r->dev_fd, BLKGETSIZE64, &bytes) || ioctl(r->dev_fd, BLKSSZGET, &lbs))
		return rx_fail(r, RX_ERROR, "%s: size: %s", r->dev_path, strerror(errno));
	if (lbs < 512 || lbs > 65536 || (lbs & (lbs - 1)))
		return rx_fail(r, RX_ERROR, "%s: odd logical block size %d", r->dev_path, lbs);
	r->dev_bytes = bytes;
	r->dev_lbs = (uint32_t)lbs;
	return RX_OK;
}

static int check_mode(struct resolver *r, struct chj_dm_status *s);

/* Read "START LEN" sector lines (chj changes output) from the test hook. */
static int read_changes_file(struct resolver *r, const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long s, l;
	char line[256];

	if (!f)
		return rx_fail(r, RX_ERROR, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llu %llu", &s, &l) != 2 || s > UINT64_MAX >> 9 ||
		    l > UINT64_MAX >> 9) {
			fclose(f);
			return rx_fail(r, RX_ERROR, "%s: bad line: %s", path, line);
		}
		rs_add(&r->changed, s << 9, l << 9);
	}
	fclose(f);
	r->region_bytes = 4096;
	/* The current epoch, for the state store (none without it). */
	{
		const char *ep = test_hook("CHJ_RESOLVE_EPOCH");

		if (ep && *ep) {
			if (chj_parse_u64(ep, &r->current_epoch) || !r->current_epoch)
				return rx_fail(r, RX_ERROR, "CHJ_RESOLVE_EPOCH: bad epoch %s", ep);
			r->epoch_known = 1;
		}
		if (!r->have_since)
			r->since = r->current_epoch;
		if (r->epoch_known && r->since > r->current_epoch)
			return rx_fail(r, RX_FULL_SCAN, "epoch %llu is newer than the current epoch %llu",
				       (unsigned long long)r->since,
				       (unsigned long long)r->current_epoch);
	}
	return RX_OK;
}

/*
 * The test hook's marks of the current epoch: the 4 KiB blocks where the
 * device (read now, O_DIRECT) differs from CHJ_RESOLVE_EPOCH_IMAGE, an
 * image of the device taken at the "checkpoint".  Without the image every
 * block counts as marked.
 */
static int image_marks(struct resolver *r, const struct rangeset *read, struct rangeset *marked)
{
	const char *img = test_hook("CHJ_RESOLVE_EPOCH_IMAGE");
	unsigned char *a = NULL, *b = NULL;
	int fd, rc = RX_OK;

	if (!img || !*img) {
		for (size_t i = 0; i < read->n; i++)
			rs_add(marked, read->v[i].start, read->v[i].len);
		return RX_OK;
	}
	fd = open(img, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rx_fail(r, RX_ERROR, "%s: %s", img, strerror(errno));
	a = xmalloc(1u << 20);
	b = xmalloc(1u << 20);
	for (size_t i = 0; i < read->n && !rc; i++) {
		uint64_t s0 = read->v[i].start / 4096 * 4096, e = read->v[i].start + read->v[i].len;

		/* In pieces of up to 1 MiB, compared 4 KiB at a time. */
		for (uint64_t p = s0; p < e && p < r->dev_bytes;) {
			uint64_t n = e - p < (1u << 20) ? (e - p + 4095) / 4096 * 4096 : (1u << 20);

			if (n > r->dev_bytes - p)
				n = r->dev_bytes - p;
			if (raw_read(r, a, n, p)) {
				rc = RX_ERROR;
				break;
			}
			if (pread(fd, b, n, (off_t)p) != (ssize_t)n) {
				rs_add(marked, p, n);
			} else {
				for (uint64_t k = 0; k < n; k += 4096)
					if (memcmp(a + k, b + k, n - k < 4096 ? n - k : 4096))
						rs_add(marked, p + k, 4096);
			}
			p += n;
		}
	}
	free(a);
	free(b);
	close(fd);
	return rc;
}

/*
 * chj-resolve-test's CHJ_RESOLVE_LOG_RACE (docs/testing.md): a shell
 * command run once, after the first read of a live log (jbd2, XFS) and
 * before its head is read again, so that a test can make the kernel move
 * the log exactly there.  Nothing in the installed chj-resolve.
 */
void test_log_race(void)
{
	static int done;
	const char *cmd = test_hook("CHJ_RESOLVE_LOG_RACE");

	if (done || !cmd || !*cmd)
		return;
	done = 1;
	if (system(cmd))
		fprintf(stderr, "chj-resolve: CHJ_RESOLVE_LOG_RACE failed\n");
}

int target_epoch_marks(struct resolver *r, const struct rangeset *read, struct rangeset *marked)
{
	struct chj_error e = { 0 };
	struct chj_dm_status s;
	struct chj_meta *m = NULL;
	struct chj_changes *ch = NULL;
	struct chj_range cr;
	struct rangeset all;
	uint64_t cur = 0;
	const char *race = test_hook("CHJ_RESOLVE_STORE_RACE");
	int rc;

	rs_clear(marked);
	/* The test of the rule: writes between the reads and the marks. */
	if (race && *race && system(race))
		return rx_fail(r, RX_ERROR, "CHJ_RESOLVE_STORE_RACE failed");
	if (changes_file()) {
		rc = image_marks(r, read, marked);
		rs_normalize(marked);
		return rc;
	}
	rc = check_mode(r, &s);
	if (rc)
		return rc;
	if (chj_meta_open_live(&m, r->dm_name, &e) ||
	    chj_changes_since(m, r->current_epoch, &ch, &e)) {
		chj_meta_close(m);
		return rx_fail(r, RX_ERROR, "%s", e.msg);
	}
	chj_meta_close(m);
	if (chj_changes_trusted(ch, r->dm_name, &e)) {
		chj_changes_free(ch);
		return rx_fail(r, RX_ERROR, "%s", e.msg);
	}
	rs_init(&all);
	while (chj_changes_next(ch, &cur, &cr))
		rs_add(&all, cr.start << CHJ_SECTOR_SHIFT, cr.len << CHJ_SECTOR_SHIFT);
	chj_changes_free(ch);
	rs_normalize(&all);
	for (size_t i = 0; i < read->n; i++) {
		const struct range g = read->v[i];

		for (size_t k = rs_find(&all, g.start); k < all.n && all.v[k].start < g.start + g.len; k++) {
			uint64_t a = all.v[k].start > g.start ? all.v[k].start : g.start;
			uint64_t b = all.v[k].start + all.v[k].len < g.start + g.len ?
				     all.v[k].start + all.v[k].len : g.start + g.len;

			if (b > a)
				rs_add(marked, a, b - a);
		}
	}
	rs_free(&all);
	rs_normalize(marked);
	/* Fail mode may have begun: then marks may be missing. */
	return check_mode(r, &s);
}

static int check_mode(struct resolver *r, struct chj_dm_status *s)
{
	struct chj_error e = { 0 };

	if (chj_dm_status(r->dm_name, s, &e))
		return rx_fail(r, RX_ERROR, "%s", e.msg);
	if (s->failed)
		return rx_fail(r, RX_FULL_SCAN,
			       "%s is in fail mode: its change map cannot be trusted",
			       r->dm_name);
	return RX_OK;
}

int target_check_mode(struct resolver *r)
{
	struct chj_dm_status s;

	if (changes_file())
		return RX_OK;
	chj_dm_init();
	return check_mode(r, &s);
}

const char *target_log_at_map(void)
{
	const char *at = changes_file() ? test_hook("CHJ_RESOLVE_LOG_AT_MAP") : NULL;

	return at && *at ? at : NULL;
}

int target_read_changes(struct resolver *r)
{
	struct chj_error e = { 0 };
	struct chj_dm_status s;
	struct chj_meta *m = NULL;
	struct chj_changes *ch = NULL;
	const struct chj_changes_info *in;
	struct chj_range cr;
	uint64_t cur = 0;
	const char *cf = changes_file();
	int rc;

	if (cf) {
		rc = read_changes_file(r, cf);
		goto done;
	}
	chj_dm_init();
	rc = check_mode(r, &s);
	if (rc)
		return rc;
	if (!r->have_since)
		r->since = s.current_epoch;
	if (chj_meta_open_live(&m, r->dm_name, &e) ||
	    chj_changes_since(m, r->since, &ch, &e)) {
		chj_meta_close(m);
		/*
		 * A metadata device that fails makes the target fail too (the
		 * "sync" of chj_meta_open_live() writes it): then the reason is
		 * fail mode, exit 3, not the read error it caused.
		 */
		if (check_mode(r, &s))
			return r->err_code;
		/* The one rule of chj and chj-resolve (chj(8), EXIT STATUS). */
		return rx_fail(r, chj_rc_full_backup(e.rc) ? RX_FULL_SCAN : RX_ERROR, "%s", e.msg);
	}
	chj_meta_close(m);
	/* A damaged bitmap block makes the answer untrustworthy: full scan. */
	if (chj_changes_trusted(ch, r->dm_name, &e)) {
		chj_changes_free(ch);
		return rx_fail(r, chj_rc_full_backup(e.rc) ? RX_FULL_SCAN : RX_ERROR, "%s", e.msg);
	}
	in = chj_changes_info(ch);
	memcpy(r->chj_uuid, in->sb.uuid, sizeof(r->chj_uuid));
	r->current_epoch = in->sb.current_epoch;
	r->epoch_known = 1;
	r->oldest_epoch = in->sb.oldest_epoch;
	r->region_bytes = in->sb.region_sectors << CHJ_SECTOR_SHIFT;
	r->st.changed_regions = in->changed_regions;
	while (chj_changes_next(ch, &cur, &cr))
		rs_add(&r->changed, cr.start << CHJ_SECTOR_SHIFT, cr.len << CHJ_SECTOR_SHIFT);
	chj_changes_free(ch);
	/* Fail mode may have begun while the map was read. */
	rc = check_mode(r, &s);
done:
	rs_normalize(&r->changed);
	r->st.changed_bytes = rs_total(&r->changed);
	r->st.changed_ranges = r->changed.n;
	return rc;
}

struct mnt {
	const char *root, *point, *fstype, *source;
	dev_t dev;
};

/* A mount's fields from libmount ("" for any it lacks). */
static void mnt_of(struct libmnt_fs *fs, struct mnt *m)
{
	const char *v;

	m->root = (v = mnt_fs_get_root(fs)) ? v : "";
	m->point = (v = mnt_fs_get_target(fs)) ? v : "";
	m->fstype = (v = mnt_fs_get_fstype(fs)) ? v : "";
	m->source = (v = mnt_fs_get_source(fs)) ? v : "";
	m->dev = mnt_fs_get_devno(fs);
}

/* Is this mount of our device (chj_mount_is_of: btrfs's anonymous maj:min)? */
static int mount_is_ours(const struct resolver *r, const struct mnt *m)
{
	return chj_mount_is_of(m->dev, m->source, r->devno);
}

static int probe_type(struct resolver *r)
{
	blkid_probe pr = blkid_new_probe_from_filename(r->dev_path);
	const char *type = NULL;
	int rc;

	if (!pr)
		return rx_fail(r, RX_ERROR, "%s: cannot probe: %s", r->dev_path, strerror(errno));
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_UUID);
	rc = blkid_do_safeprobe(pr);
	if (rc == 0 && !blkid_probe_lookup_value(pr, "TYPE", &type, NULL) && type)
		snprintf(r->fstype, sizeof(r->fstype), "%s", type);
	if (rc == 0 && !blkid_probe_lookup_value(pr, "UUID", &type, NULL) && type)
		snprintf(r->fs_uuid, sizeof(r->fs_uuid), "%s", type);
	blkid_free_probe(pr);
	if (rc == -2)
		return rx_fail(r, RX_FULL_SCAN, "%s: ambiguous filesystem signatures",
			       r->dev_path);
	if (!r->fstype[0])
		return rx_fail(r, RX_FULL_SCAN, "%s: no filesystem found on the device",
			       r->dev_path);
	return RX_OK;
}

/* A mount of type t is of the filesystem found (r->fstype): the same
 * method reads both (ext2, ext3 and ext4 are one family). */
static int same_family(const struct resolver *r, const char *t)
{
	const struct resolve_method *m = method_for(r->fstype);

	return !strcmp(t, r->fstype) || (m && m == method_for(t));
}

int target_find_mount(struct resolver *r)
{
	struct libmnt_table *tb;
	struct libmnt_iter *it;
	struct libmnt_fs *fs;
	char *want = NULL;
	struct mnt m;
	int found = 0, want_found = 0, rc;
	struct stat st;
	struct statx sx;

	rc = probe_type(r);
	if (rc)
		return rc;
	if (r->mount_opt) {
		want = realpath(r->mount_opt, NULL);
		if (!want)
			return rx_fail(r, RX_ERROR, "%s: %s", r->mount_opt, strerror(errno));
	}
	/* libmount undoes mountinfo's escapes (\040 for a space...). */
	tb = mnt_new_table_from_file("/proc/self/mountinfo");
	it = mnt_new_iter(MNT_ITER_FORWARD);
	if (!tb || !it) {
		mnt_unref_table(tb);
		mnt_free_iter(it);
		free(want);
		return rx_fail(r, RX_ERROR, "/proc/self/mountinfo: cannot be read");
	}
	while (!mnt_table_next_fs(tb, it, &fs)) {
		mnt_of(fs, &m);
		if (want) {
			/* The last mount on DIR is the one visible there. */
			if (strcmp(m.point, want))
				continue;
			want_found = 1;
			free(r->mnt);
			free(r->mnt_root);
			r->mnt = NULL;
			r->mnt_root = NULL;
			found = 0;
			if (!mount_is_ours(r, &m) || !same_family(r, m.fstype))
				continue;
		} else {
			if (!mount_is_ours(r, &m) || !same_family(r, m.fstype))
				continue;
			/* Prefer a mount of the whole filesystem. */
			if (found && (strcmp(m.root, "/") || !strcmp(r->mnt_root, "/")))
				continue;
			free(r->mnt);
			free(r->mnt_root);
		}
		r->mnt = xstrdup(m.point);
		r->mnt_root = xstrdup(m.root);
		found = 1;
	}
	mnt_free_iter(it);
	mnt_unref_table(tb);
	if (want && !want_found) {
		rc = rx_fail(r, RX_ERROR, "%s is not a mount point", want);
		free(want);
		return rc;
	}
	if (want && !found) {
		rc = rx_fail(r, RX_FULL_SCAN, "the filesystem mounted on %s is not on %s",
			     want, r->dev_path);
		free(want);
		return rc;
	}
	free(want);
	if (!found)
		return rx_fail(r, RX_ERROR, "%s (%s) is not mounted; mount it, or give --mount DIR",
			       r->dev_path, r->fstype);
	r->mnt_fd = open(r->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->mnt_fd < 0)
		return rx_fail(r, RX_ERROR, "%s: %s", r->mnt, strerror(errno));
	if (fstat(r->mnt_fd, &st))
		return rx_fail(r, RX_ERROR, "%s: %s", r->mnt, strerror(errno));
	/* btrfs reports an anonymous st_dev; its method checks its devices. */
	if (!(method_for(r->fstype) && (method_for(r->fstype)->flags & RM_ANON_DEV)) &&
	    st.st_dev != r->devno)
		return rx_fail(r, RX_FULL_SCAN, "the filesystem mounted on %s is not on %s",
			       r->mnt, r->dev_path);
	if (statx(r->mnt_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) || !(sx.stx_mask & STATX_MNT_ID))
		return rx_fail(r, RX_ERROR, "%s: statx: no mount id", r->mnt);
	r->mnt_id = sx.stx_mnt_id;
	return RX_OK;
}
