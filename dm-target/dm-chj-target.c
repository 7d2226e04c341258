// SPDX-License-Identifier: GPL-2.0
/*
 * dm-chj: a change journal for block devices.
 *
 * Maps 1:1 onto an origin device and records which regions were written, so
 * that a backup can ask "what changed since epoch E".  The one rule: every
 * region a data-changing bio touches is durably marked on the metadata device
 * before the bio is issued to the origin.
 *
 * Two tiers of marks: a chunk's bit in the intent map, written ahead of
 * the data, and a region's exact bit, set in core first and written lazily
 * by the cleaner, which also retires the marks of idle chunks.  When a
 * write may go and every state a chunk or region goes through: the state
 * table at the top of dm-chj-metadata.c.
 *
 * Fast path: a write that may go is remapped at once (bit tests and a
 * per-CPU reference: nothing shared is written per write).  Slow path: the
 * worker marks the chunks the waiting writes need in one superblock write
 * (FUA), then issues them.  A checkpoint drains in-flight writes so that
 * none can straddle two epochs unmarked in the second.
 *
 * See docs/dm-chj.txt for the table line, status and messages.
 */
#include <linux/bio.h>
#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "dm-chj-compat.h"
#include "dm-chj-metadata.h"

#define DM_MSG_PREFIX "chj"

/* The cleaner's interval: idle chunks keep their mark about this long. */
static unsigned int clean_interval_ms = 1000;
module_param(clean_interval_ms, uint, 0644);
MODULE_PARM_DESC(clean_interval_ms,
		 "How often the exact map is written and idle chunk marks are retired (milliseconds, 10 to 60000)");

/*
 * Carry the marked chunks into the new epoch at a checkpoint
 * (chj_md_checkpoint()): a workload's first writes after a checkpoint go
 * to the chunks it was writing before, and need no mark each.  The cost
 * is a crash's over-report: the carried chunks count as changed in the
 * new epoch too.
 */
static bool carry_marks = true;
module_param(carry_marks, bool, 0644);
MODULE_PARM_DESC(carry_marks,
		 "At a checkpoint, the new epoch's superblock keeps the chunks marked in the closing one (default Y)");

/*
 * Mark groups (chj_md_commit_marks()): when first touches keep coming, a
 * chunk mark also marks the rest of its aligned group of this many
 * chunks, so that a write spread over the device waits for a mark per
 * group, not per chunk.
 */
static unsigned int mark_group = 8;
module_param(mark_group, uint, 0644);
MODULE_PARM_DESC(mark_group,
		 "When first touches keep coming, a chunk mark marks its aligned group of this many chunks (1 to 64, 1: off; default 8)");

/* Default chunk: 4 MiB (docs/dm-chj.txt has the measurements). */
#define CHJ_DEFAULT_CHUNK_SECTORS 8192u

/*
 * The first cache line holds what every write reads and no write writes:
 * the fields of chj_map() and chj_end_io(), set at construction and load
 * (failed: once, in fail mode; draining: twice per checkpoint).  What the
 * slow path, the worker and the cleaner write starts on a line of its own
 * (lock), so that the fast path shares no written line.
 */
struct chj_target {
	struct dm_dev *origin_dev;
	/* NULL until the first preresume: the old table may still write. */
	struct chj_metadata *md;
	unsigned int region_shift;
	/* A metadata write failed: writes are errored until a reload. */
	bool failed;
	/* Set while a checkpoint drains: new writes go to the worker. */
	bool draining;
	/*
	 * Data writes issued to the origin and not ended, counted per CPU: a
	 * write may end on another CPU than it started on, so only the sum
	 * over CPUs means anything (get_write(), put_write(), drain_writes():
	 * the in-flight rule in the state table of dm-chj-metadata.c).
	 */
	unsigned long __percpu *writes;

	struct dm_target *ti;
	struct dm_dev *metadata_dev;
	u32 region_sectors;
	/* Feature chunk_sectors: the intent map's chunk, at least. */
	u32 chunk_sectors;
	/* Feature mark_ahead: accepted for old tables; chunks cover it. */
	u32 mark_ahead;

	/*
	 * The metadata's one writer: held for every metadata write (chunk
	 * marks, cleaning, checkpoint, mark_all, suspend, fail mode).
	 */
	struct mutex lock ____cacheline_aligned_in_smp;
	bool suspended;

	/* Writes waiting for a chunk mark; the worker marks and issues them. */
	spinlock_t defer_lock;
	struct bio_list deferred;
	struct workqueue_struct *wq;
	struct work_struct worker;
	/* Writes the exact map and retires idle chunks, every interval. */
	struct delayed_work cleaner;

	/* The checkpoint waits here for the writes in flight to end. */
	wait_queue_head_t drain_wq;
	bool fail_recorded;
	/* For the stats message: bios deferred, mark commits. */
	atomic64_t deferred_bios;
	u64 commits;	/* under lock */

	/* Preallocated record for failed_list; NULL once handed over. */
	struct chj_failed *failed_rec;
};

struct chj_failed {
	struct list_head node;
	dev_t dev;
};

struct chj_bio {
	bool counted;	/* counted in c->writes */
};

/*
 * Metadata devices whose tracker failed.  The instance that reloads one
 * starts its epoch marked-all: the failed one may not have been able to say
 * so on disk.  Each instance preallocates its record in the constructor
 * and hands it over to the list, so recording a failure never allocates.
 */
static LIST_HEAD(failed_list);
static DEFINE_MUTEX(failed_lock);

/* ------------------------------------------------------------ helpers -- */

/*
 * Count a data write in flight, unless a checkpoint drains.  Any context.
 * The flag is read and the count taken with preemption off: that section
 * is an RCU reader, which drain_writes()'s grace period waits for, so no
 * shared line is written and no barrier is needed here.
 */
static bool get_write(struct chj_target *c)
{
	bool live;

	preempt_disable();
	/* Acquire: a cleared flag means the maps reopen_writes() left. */
	live = !smp_load_acquire(&c->draining);
	if (live)
		this_cpu_inc(*c->writes);
	preempt_enable();
	return live;
}

/* A counted write ended.  Any context (its completion). */
static void put_write(struct chj_target *c)
{
	preempt_disable();
	this_cpu_dec(*c->writes);
	if (unlikely(READ_ONCE(c->draining)))
		wake_up(&c->drain_wq);
	preempt_enable();
}

/* The writes in flight: exact once no CPU can count a new one. */
static unsigned long writes_in_flight(struct chj_target *c)
{
	unsigned long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*per_cpu_ptr(c->writes, cpu));
	return sum;
}

/* Does this bio change origin data?  Empty flushes and reads do not. */
static bool bio_writes_data(struct bio *bio)
{
	return op_is_write(bio_op(bio)) && bio_sectors(bio);
}

#ifdef CHJ_PERF_CONTROL_SLOW
/*
 * The perf gate's negative control only (tests/perf/build-modules builds it
 * with -DCHJ_PERF_CONTROL_SLOW=N): N loop turns of extra work per write, a
 * few percent of its instructions, which the gate must catch.  Never defined
 * in a real build.  On x86 the loop is written out, two instructions a turn
 * whatever the compiler: gcc 14 unrolls the C loop by two (one instruction
 * a turn), which halved the control on 7.3's kernel root.
 */
static noinline void perf_control_slow(void)
{
	unsigned int i = CHJ_PERF_CONTROL_SLOW;

#ifdef CONFIG_X86
	asm volatile("1:\tdec %0\n\tjnz 1b" : "+r" (i) : : "cc");
#else
	for (; i; i--)
		barrier();
#endif
}
#else
static inline void perf_control_slow(void)
{
}
#endif

static void bio_regions(struct chj_target *c, struct bio *bio, u64 *first,
			u64 *last)
{
	*first = bio->bi_iter.bi_sector >> c->region_shift;
	*last = (bio_end_sector(bio) - 1) >> c->region_shift;
}

static void note_failed(struct chj_target *c)
{
	dev_t dev = c->metadata_dev->bdev->bd_dev;
	struct chj_failed *f;

	mutex_lock(&failed_lock);
	list_for_each_entry(f, &failed_list, node)
		if (f->dev == dev)
			goto out;
	if (c->failed_rec) {
		c->failed_rec->dev = dev;
		list_add(&c->failed_rec->node, &failed_list);
		c->failed_rec = NULL;
	}
out:
	mutex_unlock(&failed_lock);
}

/*
 * Enter fail mode, and say so once in the log and on the metadata: called
 * with c->lock held and commits paused, so the superblock is ours.
 */
static void enter_fail_mode(struct chj_target *c, const char *what, int err)
{
	WRITE_ONCE(c->failed, true);
	if (c->fail_recorded)
		return;
	c->fail_recorded = true;
	DMERR("%s: %s failed (%d): writes are errored until the table is reloaded",
	      dm_device_name(dm_table_get_md(c->ti->table)), what, err);
	chj_md_flag_all_changed(c->md);
	note_failed(c);
}

/* Did a previous instance on this metadata device fail?  Forget it if so. */
static bool take_failed(dev_t dev)
{
	struct chj_failed *f, *tmp;
	bool found = false;

	mutex_lock(&failed_lock);
	list_for_each_entry_safe(f, tmp, &failed_list, node) {
		if (f->dev == dev) {
			list_del(&f->node);
			kfree(f);
			found = true;
		}
	}
	mutex_unlock(&failed_lock);
	return found;
}

/* ------------------------------------------------------------ bio path -- */

/*
 * A bio whose chunks are durably marked: counted in flight, to the origin.
 * With c->lock, so no checkpoint drains (it holds the lock throughout):
 * counted without looking at the flag.
 */
static void issue_held(struct chj_target *c, struct bio *bio)
{
	struct chj_bio *pb = dm_per_bio_data(bio, sizeof(*pb));

	pb->counted = true;
	this_cpu_inc(*c->writes);
	submit_bio_noacct(bio);
}

static void error_bios(struct bio_list *bios)
{
	struct bio *bio;

	while ((bio = bio_list_pop(bios)))
		bio_io_error(bio);
}

static void arm_cleaner(struct chj_target *c)
{
	unsigned int ms = clamp(READ_ONCE(clean_interval_ms), 10u, 60000u);

	queue_delayed_work(c->wq, &c->cleaner, msecs_to_jiffies(ms));
}

/*
 * With c->lock: mark the chunks the waiting bios need, in one commit, then
 * issue them.  No checkpoint can run meanwhile (it takes the lock), so the
 * exact bits chj_md_set_exact_may_issue() sets are those of the epoch they
 * go out in.
 */
static void mark_and_issue(struct chj_target *c, struct bio_list *bios)
{
	struct bio_list again;
	struct bio *bio;
	u64 first, last;
	int r;

	if (c->failed) {
		error_bios(bios);
		return;
	}
	bio_list_for_each(bio, bios) {
		bio_regions(c, bio, &first, &last);
		chj_md_want(c->md, first, last);
	}
	r = chj_md_commit_marks(c->md, clamp(READ_ONCE(mark_group), 1u, 64u));
	if (r) {
		enter_fail_mode(c, "chunk mark", r);
		error_bios(bios);
		return;
	}
	c->commits++;
	bio_list_init(&again);
	while ((bio = bio_list_pop(bios))) {
		bio_regions(c, bio, &first, &last);
		if (chj_md_set_exact_may_issue(c->md, first, last))
			issue_held(c, bio);
		else
			bio_list_add(&again, bio);	/* cannot happen: retry */
	}
	if (!bio_list_empty(&again)) {
		spin_lock_irq(&c->defer_lock);
		bio_list_merge_head(&c->deferred, &again);
		spin_unlock_irq(&c->defer_lock);
		queue_work(c->wq, &c->worker);
	}
	arm_cleaner(c);
}

static void do_worker(struct work_struct *ws)
{
	struct chj_target *c = container_of(ws, struct chj_target, worker);
	struct bio_list bios;

	mutex_lock(&c->lock);
	spin_lock_irq(&c->defer_lock);
	bios = c->deferred;
	bio_list_init(&c->deferred);
	spin_unlock_irq(&c->defer_lock);
	if (!bio_list_empty(&bios))
		mark_and_issue(c, &bios);
	mutex_unlock(&c->lock);
}

/*
 * Every interval: write the exact map and retire the chunks no write
 * touched since the last pass.  Never while suspended: nothing is written
 * after postsuspend, which did the last pass.
 */
static void do_clean(struct work_struct *ws)
{
	struct chj_target *c = container_of(to_delayed_work(ws), struct chj_target,
					    cleaner);
	int r;

	mutex_lock(&c->lock);
	if (!c->suspended && !c->failed && c->md) {
		r = chj_md_clean(c->md, false);
		if (r)
			enter_fail_mode(c, "exact map write", r);
		else if (chj_md_needs_clean(c->md))
			arm_cleaner(c);
	}
	mutex_unlock(&c->lock);
}

static void defer_bio(struct chj_target *c, struct bio *bio)
{
	unsigned long flags;

	atomic64_inc(&c->deferred_bios);
	spin_lock_irqsave(&c->defer_lock, flags);
	bio_list_add(&c->deferred, bio);
	spin_unlock_irqrestore(&c->defer_lock, flags);
	queue_work(c->wq, &c->worker);
}

static int chj_map(struct dm_target *ti, struct bio *bio)
{
	struct chj_target *c = ti->private;
	struct chj_bio *pb = dm_per_bio_data(bio, sizeof(*pb));
	u64 first, last;

	pb->counted = false;
	bio_set_dev(bio, c->origin_dev->bdev);
	bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	if (!bio_writes_data(bio))
		return DM_MAPIO_REMAPPED;
	if (READ_ONCE(c->failed))
		return DM_MAPIO_KILL;
	perf_control_slow();

	bio_regions(c, bio, &first, &last);
	/*
	 * Counted before the maps are read: a checkpoint that drains after
	 * this waits for this write to end.  While one drains, the write goes
	 * to the worker, which waits for the checkpoint.
	 */
	if (get_write(c)) {
		if (chj_md_set_exact_may_issue(c->md, first, last)) {
			pb->counted = true;
			return DM_MAPIO_REMAPPED;
		}
		put_write(c);
	}
	defer_bio(c, bio);
	return DM_MAPIO_SUBMITTED;
}

static int chj_end_io(struct dm_target *ti, struct bio *bio,
		      blk_status_t *error)
{
	struct chj_bio *pb = dm_per_bio_data(bio, sizeof(*pb));
	struct chj_target *c = ti->private;

	if (pb->counted)
		put_write(c);
	return DM_ENDIO_DONE;
}

/* ------------------------------------------------------------ messages -- */

/*
 * With c->lock; sleeps.  Close the fast path and wait for every data write
 * issued so far to end, as dm core waits for its per-CPU pending I/O at
 * suspend.  After the grace period every get_write() has either counted
 * its write or seen the flag (and sent the write to the worker, which
 * waits for c->lock), and every put_write() that missed the flag has its
 * decrement in the sum; the later ones wake us.  From then on the counts
 * only fall, so a sum of zero is exact.  The worker issues only under
 * c->lock.  Expedited: the fast path is closed until it ends.
 */
static void drain_writes(struct chj_target *c)
{
	WRITE_ONCE(c->draining, true);
	synchronize_rcu_expedited();
	wait_event(c->drain_wq, !writes_in_flight(c));
	smp_mb(); /* the drained writes' exact bits before the epoch is read */
}

/*
 * With c->lock, after drain_writes().  Open the fast path again on the
 * maps as they are now (the new epoch's after a checkpoint), and let the
 * worker mark and issue the writes held meanwhile.
 */
static void reopen_writes(struct chj_target *c)
{
	smp_store_release(&c->draining, false); /* maps first; see get_write() */
	queue_work(c->wq, &c->worker);
}

/*
 * End the epoch, with c->lock held; sleeps.  Every write already issued is
 * waited for: a write still in flight when the new epoch starts could land
 * after a backup read its region, so it must not be left to the old epoch
 * alone.  Writes held meanwhile are marked in the new one.
 */
static int checkpoint(struct chj_target *c, u64 *epoch)
{
	int r;

	drain_writes(c);
	r = chj_md_checkpoint(c->md, READ_ONCE(carry_marks), epoch);
	if (r)
		enter_fail_mode(c, "checkpoint", r);
	reopen_writes(c);
	return r;
}

/*
 * "sync", for readers of a live device (libchj does it before reading):
 * write the exact map's changed blocks, so that the bitmap on disk holds
 * every write issued before the message and the reader need not count
 * the marked chunks whole.  Answers the current epoch, which the reader
 * compares with the superblock it reads.  Suspended: postsuspend wrote
 * everything, and nothing may be written now.
 */
static int sync_exact(struct chj_target *c, char *result, unsigned int maxlen)
{
	struct chj_md_stats st;
	int r = 0;

	if (!c->md)
		return -EBUSY;
	if (c->failed)
		return -EIO;
	if (!c->suspended) {
		r = chj_md_write_exact(c->md);
		if (r) {
			enter_fail_mode(c, "exact map write", r);
			return r;
		}
	}
	chj_md_stats(c->md, &st);
	scnprintf(result, maxlen, "%llu", st.current_epoch);
	return 1;
}

/* Counters for benchmarks and troubleshooting, as key=value pairs. */
static int stats(struct chj_target *c, char *result, unsigned int maxlen)
{
	struct chj_md_stats st = {};

	if (c->md)
		chj_md_stats(c->md, &st);
	scnprintf(result, maxlen,
		  "deferred_bios=%llu commits=%llu bitmap_writes=%llu journal_writes=%llu superblock_writes=%llu chunk_marks=%llu chunk_retires=%llu marked_chunks=%llu chunk_regions=%llu coarse=%u",
		  (u64)atomic64_read(&c->deferred_bios), READ_ONCE(c->commits),
		  st.bitmap_writes, st.journal_writes, st.sb_writes,
		  st.chunk_marks, st.chunk_retires, st.marked_chunks,
		  st.chunk_regions, st.coarse);
	return 1;
}

static int chj_message(struct dm_target *ti, unsigned int argc, char **argv,
		       char *result, unsigned int maxlen)
{
	struct chj_target *c = ti->private;
	u64 epoch;
	int r;

	if (argc != 1 || (strcasecmp(argv[0], "checkpoint") &&
			  strcasecmp(argv[0], "mark_all") &&
			  strcasecmp(argv[0], "stats") &&
			  strcasecmp(argv[0], "sync"))) {
		DMWARN("unrecognised message: expected checkpoint, mark_all, stats or sync");
		return -EINVAL;
	}
	mutex_lock(&c->lock);
	if (!strcasecmp(argv[0], "stats")) {
		r = stats(c, result, maxlen);
	} else if (!strcasecmp(argv[0], "sync")) {
		r = sync_exact(c, result, maxlen);
	} else if (!c->md || c->suspended) {
		DMWARN("%s refused: device is suspended", argv[0]);
		r = -EBUSY;
	} else if (c->failed) {
		DMWARN("%s refused: target is in fail mode", argv[0]);
		r = -EIO;
	} else if (!strcasecmp(argv[0], "checkpoint")) {
		r = checkpoint(c, &epoch);
		if (!r) {
			scnprintf(result, maxlen, "%llu", epoch);
			r = 1;
		}
	} else {
		/* Drained: its recount must not race a first touch's count. */
		drain_writes(c);
		r = chj_md_mark_all(c->md);
		if (r)
			enter_fail_mode(c, "mark_all", r);
		reopen_writes(c);
	}
	mutex_unlock(&c->lock);
	return r;
}

/* ------------------------------------------------------ status, limits -- */

/*
 * INFO: <region_sectors> <current_epoch> <oldest_epoch>
 *       <marked_regions>/<nr_regions> <journal_used>/<journal_blocks> <mode>
 * Before the first resume the numbers are "-".
 */
static void chj_status(struct dm_target *ti, status_type_t type,
		       unsigned int status_flags, char *result,
		       unsigned int maxlen)
{
	struct chj_target *c = ti->private;
	struct chj_md_stats st;
	unsigned int sz = 0;

	switch (type) {
	case STATUSTYPE_INFO:
		mutex_lock(&c->lock);
		if (!c->md) {
			DMEMIT("%u - - -/- -/- %s", c->region_sectors,
			       c->failed ? "fail" : "ok");
		} else {
			chj_md_stats(c->md, &st);
			DMEMIT("%u %llu %llu %llu/%llu %llu/%llu %s",
			       c->region_sectors, st.current_epoch,
			       st.oldest_epoch, st.marked, st.nr_regions,
			       st.journal_used, st.journal_blocks,
			       c->failed ? "fail" : "ok");
		}
		mutex_unlock(&c->lock);
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s %s %u", c->metadata_dev->name, c->origin_dev->name,
		       c->region_sectors);
		if (c->mark_ahead || c->chunk_sectors != CHJ_DEFAULT_CHUNK_SECTORS)
			DMEMIT(" %u", (c->mark_ahead ? 2 : 0) +
			       (c->chunk_sectors != CHJ_DEFAULT_CHUNK_SECTORS ? 2 : 0));
		if (c->chunk_sectors != CHJ_DEFAULT_CHUNK_SECTORS)
			DMEMIT(" chunk_sectors %u", c->chunk_sectors);
		if (c->mark_ahead)
			DMEMIT(" mark_ahead %u", c->mark_ahead);
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",metadata_device=%s,origin_device=%s,region_sectors=%u",
		       c->metadata_dev->name, c->origin_dev->name,
		       c->region_sectors);
		DMEMIT(",chunk_sectors=%u,mark_ahead=%u;", c->chunk_sectors,
		       c->mark_ahead);
		break;
	}
}

static int chj_iterate_devices(struct dm_target *ti,
			       iterate_devices_callout_fn fn, void *data)
{
	struct chj_target *c = ti->private;

	return fn(ti, c->origin_dev, 0, ti->len, data);
}

/* ----------------------------------------------------------- lifecycle -- */

static void chj_postsuspend(struct dm_target *ti)
{
	struct chj_target *c = ti->private;

	int r;

	/*
	 * dm has waited for every bio, so the worker has nothing left to
	 * issue; it and the cleaner take the lock, so they are stopped first.
	 * The last pass writes the exact map and retires every chunk: a clean
	 * stop leaves no mark, and the next load answers exactly.  Nothing is
	 * written after this until resume (the next table may be loading).
	 */
	cancel_delayed_work_sync(&c->cleaner);
	flush_workqueue(c->wq);
	mutex_lock(&c->lock);
	if (c->md && !c->failed) {
		r = chj_md_clean(c->md, true);
		if (r)
			enter_fail_mode(c, "exact map write at suspend", r);
	}
	c->suspended = true;
	mutex_unlock(&c->lock);
}

static int chj_preresume(struct dm_target *ti)
{
	struct chj_target *c = ti->private;
	struct chj_metadata *md;
	char *error = NULL;
	bool mark_all;

	if (c->md)
		return 0;
	mark_all = take_failed(c->metadata_dev->bdev->bd_dev);
	md = chj_md_open(c->metadata_dev->bdev, ti->len, c->region_sectors,
			 __ffs(c->chunk_sectors) - c->region_shift, mark_all,
			 &error);
	if (IS_ERR(md)) {
		DMERR("%s: %s", dm_device_name(dm_table_get_md(ti->table)),
		      error ? error : "cannot load metadata");
		if (mark_all)
			note_failed(c);
		return PTR_ERR(md);
	}
	if (mark_all)
		DMWARN("%s: previous instance failed: current epoch marked all",
		       dm_device_name(dm_table_get_md(ti->table)));
	c->md = md;
	return 0;
}

static void chj_resume(struct dm_target *ti)
{
	struct chj_target *c = ti->private;

	mutex_lock(&c->lock);
	c->suspended = false;
	mutex_unlock(&c->lock);
	queue_work(c->wq, &c->worker);
}

/* Check the metadata device can hold this origin, and say how much it needs. */
static int check_metadata(struct dm_target *ti, struct chj_target *c)
{
	struct block_device *mbdev = c->metadata_dev->bdev;
	u64 dev_blocks = bdev_nr_sectors(mbdev) / CHJ_BLOCK_SECTORS;
	u64 nr = chj_regions_for(ti->len, c->region_sectors), need;
	struct chj_superblock sb;
	bool blank;
	int r;

	r = chj_md_peek(mbdev, &sb, &blank, &ti->error);
	if (r)
		return r;
	if (!blank) {
		if (le32_to_cpu(sb.region_sectors) != c->region_sectors) {
			DMERR("metadata has region size %u sectors, table says %u",
			      le32_to_cpu(sb.region_sectors), c->region_sectors);
			ti->error = "Region size differs from the metadata's";
			return -EINVAL;
		}
		if (ti->len < le64_to_cpu(sb.origin_sectors)) {
			ti->error = "Shrinking a tracked origin is not supported";
			return -EINVAL;
		}
		if (chj_bitmap_blocks_for(nr) == le64_to_cpu(sb.bitmap_blocks))
			return 0;
	}
	need = chj_min_metadata_blocks(nr);
	if (need > dev_blocks) {
		DMERR("metadata device too small: %llu bytes needed, %llu present",
		      need * CHJ_BLOCK_SIZE, dev_blocks * CHJ_BLOCK_SIZE);
		ti->error = "Metadata device too small (kernel log has the size needed)";
		return -ENOSPC;
	}
	return 0;
}

/* [<#feature args> <feature arg>*]: "chunk_sectors <n>", "mark_ahead <n>". */
static int parse_features(struct dm_target *ti, struct chj_target *c,
			  unsigned int argc, char **argv)
{
	unsigned int nfeat, i;

	if (kstrtouint(argv[0], 10, &nfeat) || nfeat != argc - 1) {
		ti->error = "Feature argument count does not match";
		return -EINVAL;
	}
	for (i = 1; i < argc; i++) {
		if (!strcasecmp(argv[i], "chunk_sectors") && i + 1 < argc) {
			if (kstrtou32(argv[++i], 10, &c->chunk_sectors) ||
			    !is_power_of_2(c->chunk_sectors) ||
			    c->chunk_sectors < c->region_sectors) {
				ti->error = "chunk_sectors: a power of two >= the region size";
				return -EINVAL;
			}
		} else if (!strcasecmp(argv[i], "mark_ahead") && i + 1 < argc) {
			if (kstrtou32(argv[++i], 10, &c->mark_ahead) ||
			    c->mark_ahead > CHJ_REGIONS_PER_BLOCK) {
				ti->error = "mark_ahead takes 0 to 32640 regions";
				return -EINVAL;
			}
		} else {
			ti->error = "Unknown feature argument";
			return -EINVAL;
		}
	}
	return 0;
}

static int chj_parse_args(struct dm_target *ti, struct chj_target *c,
			  unsigned int argc, char **argv)
{
	blk_mode_t mode = dm_table_get_mode(ti->table);
	int r;

	if (argc < 3) {
		ti->error = "Expected <metadata_dev> <origin_dev> <region_size_sectors>";
		return -EINVAL;
	}
	if (kstrtou32(argv[2], 10, &c->region_sectors) ||
	    !chj_region_sectors_valid(c->region_sectors)) {
		ti->error = "Region size must be a power of two from 8 to 2097152 sectors";
		return -EINVAL;
	}
	c->region_shift = __ffs(c->region_sectors);
	c->chunk_sectors = max(CHJ_DEFAULT_CHUNK_SECTORS, c->region_sectors);
	if (argc > 3) {
		r = parse_features(ti, c, argc - 3, argv + 3);
		if (r)
			return r;
	}
	r = dm_get_device(ti, argv[0], mode, &c->metadata_dev);
	if (r) {
		ti->error = "Cannot open metadata device";
		return r;
	}
	r = dm_get_device(ti, argv[1], mode, &c->origin_dev);
	if (r) {
		ti->error = "Cannot open origin device";
		return r;
	}
	if (c->metadata_dev->bdev == c->origin_dev->bdev) {
		ti->error = "Metadata and origin must be different devices";
		return -EINVAL;
	}
	if (bdev_logical_block_size(c->metadata_dev->bdev) > CHJ_BLOCK_SIZE) {
		ti->error = "Metadata device logical block size exceeds 4096";
		return -EINVAL;
	}
	if (ti->begin || ti->len > bdev_nr_sectors(c->origin_dev->bdev)) {
		ti->error = ti->begin ? "Target must start at sector 0" :
			"Table length exceeds the origin device";
		return -EINVAL;
	}
	return 0;
}

static void chj_dtr(struct dm_target *ti)
{
	struct chj_target *c = ti->private;

	if (c->wq) {
		cancel_delayed_work_sync(&c->cleaner);
		destroy_workqueue(c->wq);
	}
	chj_md_close(c->md);
	free_percpu(c->writes);
	if (c->metadata_dev)
		dm_put_device(ti, c->metadata_dev);
	if (c->origin_dev)
		dm_put_device(ti, c->origin_dev);
	kfree(c->failed_rec);
	kfree(c);
}

/*
 * <metadata_dev> <origin_dev> <region_size_sectors> [<#features> <feature>*]
 */
static int chj_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct chj_target *c = kzalloc_obj(*c);
	int r;

	if (!c) {
		ti->error = "Cannot allocate target";
		return -ENOMEM;
	}
	c->ti = ti;
	ti->private = c;
	mutex_init(&c->lock);
	spin_lock_init(&c->defer_lock);
	bio_list_init(&c->deferred);
	INIT_WORK(&c->worker, do_worker);
	INIT_DELAYED_WORK(&c->cleaner, do_clean);
	init_waitqueue_head(&c->drain_wq);
	c->suspended = true;
	c->failed_rec = kzalloc_obj(*c->failed_rec);
	c->writes = alloc_percpu(unsigned long);
	if (!c->failed_rec || !c->writes) {
		ti->error = "Cannot allocate target";
		r = -ENOMEM;
		goto bad;
	}

	r = chj_parse_args(ti, c, argc, argv);
	if (!r)
		r = check_metadata(ti, c);
	if (r)
		goto bad;
	c->wq = alloc_workqueue("dm-" DM_MSG_PREFIX, WQ_MEM_RECLAIM | WQ_PERCPU, 0);
	if (!c->wq) {
		ti->error = "Cannot allocate workqueue";
		r = -ENOMEM;
		goto bad;
	}
	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->num_secure_erase_bios = 1;
	ti->num_write_zeroes_bios = 1;
	ti->per_io_data_size = sizeof(struct chj_bio);
	return 0;
bad:
	chj_dtr(ti);
	return r;
}

static struct target_type chj_target = {
	.name = "chj",
	.version = {2, 0, 0},
	.module = THIS_MODULE,
	.ctr = chj_ctr,
	.dtr = chj_dtr,
	.map = chj_map,
	.end_io = chj_end_io,
	.postsuspend = chj_postsuspend,
	.preresume = chj_preresume,
	.resume = chj_resume,
	.status = chj_status,
	.message = chj_message,
	.iterate_devices = chj_iterate_devices,
};

static int __init dm_chj_init(void)
{
	int r = dm_register_target(&chj_target);

	if (r)
		DMERR("register failed %d", r);
	return r;
}

static void __exit dm_chj_exit(void)
{
	struct chj_failed *f, *tmp;

	dm_unregister_target(&chj_target);
	list_for_each_entry_safe(f, tmp, &failed_list, node) {
		list_del(&f->node);
		kfree(f);
	}
}

module_init(dm_chj_init);
module_exit(dm_chj_exit);

MODULE_DESCRIPTION(DM_NAME " change journal target: crash-safe write tracking with epochs");
MODULE_AUTHOR("chj developers");
MODULE_LICENSE("GPL");
/* dkms.conf has the same version; tests/vm/dkms.sh checks they agree. */
MODULE_VERSION("1.0.0");
MODULE_SOFTDEP("pre: crc32c");
