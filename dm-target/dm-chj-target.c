// SPDX-License-Identifier: GPL-2.0
/*
 * dm-chj: a change journal for block devices.
 *
 * Maps 1:1 onto an origin device and records which regions were written, so
 * that a backup can ask "what changed since epoch E".  The one rule: every
 * region a data-changing bio touches is durably marked on the metadata device
 * before the bio is issued to the origin.
 *
 * Fast path: a write whose regions are all durably marked is remapped at
 * once (a bit test and an in-flight count).  Slow path: first-touch writes
 * wait in a batch whose marks are group-committed, then are issued.  One
 * batch is written at a time; writes arriving meanwhile form the next one.
 * Whoever finds no batch in flight starts one, from the bio path itself, so
 * a device that completes at once (a RAM disk) never waits for a worker;
 * unless its submitters do not wait for their writes, when a worker on
 * another CPU commits in parallel with them (choose_offload()).
 * A checkpoint drains in-flight writes so that none can straddle two epochs
 * unmarked in the second.
 *
 * See docs/dm-chj.txt for the table line, status and messages.
 */
#include <linux/bio.h>
#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/clock.h>
#include <linux/sched/isolation.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "dm-chj-compat.h"
#include "dm-chj-metadata.h"

#define DM_MSG_PREFIX "chj"

/*
 * A submitter that finishes a batch inline also starts the next one, with
 * other threads' writes in it.  After this many in a row it hands over to
 * the worker, so that no writer's submit_bio() serves the others for long.
 */
#define CHJ_INLINE_BATCHES 64

/*
 * Offload (see choose_offload()): the worker leaves the CPU to others after
 * this many batches; offload ends after this many first-touch writes in a
 * row that overlapped no other; probes are this far apart.
 */
#define CHJ_WORKER_BATCHES 256
#define CHJ_SERIAL_EXIT 4
#define CHJ_PROBE_INTERVAL (HZ / 20)

static unsigned int commit_poll_us = 50;
module_param(commit_poll_us, uint, 0644);
MODULE_PARM_DESC(commit_poll_us,
		 "How long the commit worker waits for the next first-touch write when commits are offloaded (microseconds; 0: never offload)");

/* A task and its voluntary context switches then: has it slept since? */
struct chj_task_mark {
	const void *task;	/* compared, never dereferenced */
	unsigned long nvcsw;
};

struct chj_target {
	struct dm_target *ti;
	struct dm_dev *metadata_dev;
	struct dm_dev *origin_dev;
	u32 region_sectors;
	unsigned int region_shift;
	/* Feature mark_ahead: regions marked past a sequential write. */
	u32 mark_ahead;

	/* NULL until the first preresume: the old table may still write. */
	struct chj_metadata *md;

	/* Serializes checkpoint, mark_all, suspend and the fail-mode record. */
	struct mutex lock;
	bool suspended;

	/*
	 * The committer token: while committing is set, one thread owns the
	 * staging buffers and bitmap writes, and batch holds the bios whose
	 * marks it writes.  paused keeps the token from being taken, for
	 * whoever holds lock and needs the metadata to itself.  defer_lock
	 * protects deferred (first-touch bios for the next batch), committing
	 * and paused.
	 */
	spinlock_t defer_lock;
	struct bio_list deferred;
	bool committing;
	bool paused;
	struct bio_list batch;
	bool batch_written;	/* the batch's writes ended; err in batch_err */
	int batch_err;
	/* Batches finished in a row by whichever thread submitted them. */
	unsigned int inline_run;
	struct workqueue_struct *wq;
	struct work_struct worker;
	/*
	 * Offload, under defer_lock: the worker runs the batches on another
	 * CPU and polls for the next first-touch write.  polling: it does so
	 * now, without the token, and will take it for whatever arrives.
	 */
	bool offload;
	bool polling;
	unsigned int serial;
	unsigned long next_probe;
	struct chj_task_mark last_submitter;	/* of a first-touch write */
	/* The last batch's writes ended inside its submitter's submit_bio(). */
	bool md_sync;
	struct chj_task_mark batch_submitter;
	/* First-touch writes deferred and not yet ended. */
	atomic_t ft_pending;

	/* Writes issued on the fast path or from a batch, not yet ended. */
	atomic_t in_flight;
	wait_queue_head_t drain_wq;
	/* Set while a checkpoint drains: new writes take the slow path. */
	bool ckpt_pending;
	/* A metadata write failed: writes are errored until a reload. */
	bool failed;
	bool fail_recorded;
	/* For the stats message: bios deferred, group commits. */
	atomic64_t deferred_bios;
	atomic64_t offloaded_bios;	/* deferred with the worker asked to commit */
	u64 commits;	/* batches written; by the token's holder */

	/* Preallocated record for failed_list; NULL once handed over. */
	struct chj_failed *failed_rec;
};

struct chj_failed {
	struct list_head node;
	dev_t dev;
};

struct chj_bio {
	bool counted;	/* holds an in_flight reference */
	bool first_touch;	/* counted in ft_pending */
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

static void put_in_flight(struct chj_target *c)
{
	if (atomic_dec_and_test(&c->in_flight) && wq_has_sleeper(&c->drain_wq))
		wake_up(&c->drain_wq);
}

/* Does this bio change origin data?  Empty flushes and reads do not. */
static bool bio_writes_data(struct bio *bio)
{
	return op_is_write(bio_op(bio)) && bio_sectors(bio);
}

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

static void mark_task(struct chj_task_mark *m)
{
	m->task = current;
	m->nvcsw = current->nvcsw;
}

/* Is this the marked task, and has it not slept since? */
static bool awake_since(const struct chj_task_mark *m)
{
	return m->task == current && m->nvcsw == current->nvcsw;
}

/* Take the committer token if it is free and there is work: defer_lock held. */
static bool take_token(struct chj_target *c)
{
	if (c->committing || c->paused || bio_list_empty(&c->deferred))
		return false;
	c->committing = true;
	return true;
}

/*
 * With c->lock held: wait for the batch in flight, if any, and let no other
 * start, so that the caller has the metadata to itself.
 */
static void pause_commits(struct chj_target *c)
{
	spin_lock_irq(&c->defer_lock);
	c->paused = true;
	spin_unlock_irq(&c->defer_lock);
	wait_event(c->drain_wq, !READ_ONCE(c->committing));
}

static void resume_commits(struct chj_target *c)
{
	bool start;

	spin_lock_irq(&c->defer_lock);
	c->paused = false;
	start = take_token(c);
	spin_unlock_irq(&c->defer_lock);
	if (start)
		queue_work(c->wq, &c->worker);
}

/* A held bio whose marks are durable: counted in flight, to the origin. */
static void issue_held(struct chj_target *c, struct bio *bio)
{
	struct chj_bio *pb = dm_per_bio_data(bio, sizeof(*pb));

	pb->counted = true;
	atomic_inc(&c->in_flight);
	submit_bio_noacct(bio);
}

static void error_bios(struct bio_list *bios)
{
	struct bio *bio;

	while ((bio = bio_list_pop(bios)))
		bio_io_error(bio);
}

/*
 * With mark_ahead, a first-touch write that continues a marked region (a
 * sequential stream) also marks the next regions, so the stream's following
 * writes take the fast path.  The extra marks are false positives at worst.
 */
static u64 mark_ahead_last(struct chj_target *c, u64 first, u64 last)
{
	u64 nr = chj_regions_for(c->ti->len, c->region_sectors);

	if (!c->mark_ahead || !first || !chj_md_durable(c->md, first - 1, first - 1))
		return last;
	return min(last + c->mark_ahead, nr - 1);
}

/* With the token: move waiting bios into the batch and stage their marks. */
static void stage_batch(struct chj_target *c, struct bio_list *bios)
{
	struct bio *bio;
	u64 first, last;

	while ((bio = bio_list_pop(bios))) {
		bio_regions(c, bio, &first, &last);
		last = mark_ahead_last(c, first, last);
		if (chj_md_stage(c->md, first, last, &first) == 1) {
			/*
			 * Staging is full.  This bio waits for the next batch,
			 * which stages the rest of it: each batch makes progress.
			 */
			bio_list_add_head(bios, bio);
			spin_lock_irq(&c->defer_lock);
			bio_list_merge_head(&c->deferred, bios);
			spin_unlock_irq(&c->defer_lock);
			bio_list_init(bios);
			return;
		}
		bio_list_add(&c->batch, bio);
	}
}

static void batch_done(void *ctx, int err);

/*
 * With the token: start the next batch, or give the token back when there is
 * nothing to do or someone paused commits.  Bios whose regions turn out to be
 * durable already (a batch marked them) go out without a write.
 */
static void start_batch(struct chj_target *c)
{
	struct bio_list bios;
	struct bio *bio;

	for (;;) {
		spin_lock_irq(&c->defer_lock);
		if (c->paused || bio_list_empty(&c->deferred)) {
			c->committing = false;
			c->inline_run = 0;
			spin_unlock_irq(&c->defer_lock);
			if (wq_has_sleeper(&c->drain_wq))
				wake_up(&c->drain_wq);
			return;
		}
		bios = c->deferred;
		bio_list_init(&c->deferred);
		spin_unlock_irq(&c->defer_lock);

		if (READ_ONCE(c->failed)) {
			error_bios(&bios);
			continue;
		}
		stage_batch(c, &bios);
		c->batch_written = false;
		mark_task(&c->batch_submitter);
		/* From here batch_done() may run at any moment, on any CPU. */
		if (chj_md_write_staged(c->md, batch_done, c))
			return;
		while ((bio = bio_list_pop(&c->batch)))
			issue_held(c, bio);
	}
}

/*
 * Fail mode after a bitmap write failed, outside the token: a checkpoint
 * holding the lock may be waiting for the token.  c->failed is already set,
 * so every later batch errors its bios.
 */
static void record_batch_failure(struct chj_target *c, int err)
{
	mutex_lock(&c->lock);
	pause_commits(c);
	enter_fail_mode(c, "bitmap write", err);
	resume_commits(c);
	mutex_unlock(&c->lock);
}

/* With the token, the batch's writes ended: issue or error its bios. */
static void finish_batch(struct chj_target *c)
{
	struct bio *bio;
	int err = c->batch_err;

	c->batch_written = false;
	WRITE_ONCE(c->commits, c->commits + 1);
	chj_md_end_staged(c->md, err);
	if (err) {
		WRITE_ONCE(c->failed, true);
		error_bios(&c->batch);
	}
	while ((bio = bio_list_pop(&c->batch)))
		issue_held(c, bio);
	start_batch(c);
	if (err)
		record_batch_failure(c, err);
}

/*
 * The last bitmap write of the batch ended.  Where that happened in task
 * context inside a submit_bio() loop, with nothing held (a RAM disk
 * completes in its submitter), the batch is finished right here:
 * submit_bio_noacct() then only adds the held bios to current->bio_list.
 * Anywhere else (interrupt, a lock held, an error, or a thread that has
 * finished CHJ_INLINE_BATCHES already) the worker finishes it.
 */
static void batch_done(void *ctx, int err)
{
	struct chj_target *c = ctx;
	bool sync = in_task() && current->bio_list;

	c->batch_err = err;
	c->batch_written = true;
	/*
	 * Not sync if the submitter slept meanwhile: a kworker may run the
	 * batch and, later, the work of a device that delayed its writes.
	 */
	WRITE_ONCE(c->md_sync, sync && awake_since(&c->batch_submitter));
	if (!err && c->inline_run < CHJ_INLINE_BATCHES && sync &&
	    preemptible() && !rcu_preempt_depth()) {
		c->inline_run++;
		finish_batch(c);
	} else {
		c->inline_run = 0;
		queue_work(c->wq, &c->worker);
	}
}

/*
 * Offload, in the worker, without the token: wait up to commit_poll_us for
 * a first-touch write, and take the token if one is waiting.  Submitters
 * that see polling set leave the token to the worker, so they queue their
 * bio and return: no wake-up, and the commit runs on this CPU meanwhile.
 */
static bool poll_for_bios(struct chj_target *c)
{
	u64 until = local_clock() + (u64)READ_ONCE(commit_poll_us) * NSEC_PER_USEC;
	bool start;

	spin_lock_irq(&c->defer_lock);
	if (!c->offload || c->committing || c->paused) {
		spin_unlock_irq(&c->defer_lock);
		return false;
	}
	c->polling = true;
	spin_unlock_irq(&c->defer_lock);
	/* A hint read unlocked; the decision below is made under the lock. */
	while (!READ_ONCE(c->deferred.head) && READ_ONCE(c->offload) &&
	       !READ_ONCE(c->paused) && !need_resched() &&
	       local_clock() < until)
		cpu_relax();
	spin_lock_irq(&c->defer_lock);
	c->polling = false;
	start = take_token(c);
	spin_unlock_irq(&c->defer_lock);
	return start;
}

/*
 * Runs with the token: finish a written batch, or start one.  When offloaded,
 * go on with the batches that arrive while polling, for a while; then hand
 * the token to a fresh run of this work item, so that the CPU is shared.
 */
static void do_worker(struct work_struct *ws)
{
	struct chj_target *c = container_of(ws, struct chj_target, worker);
	unsigned int n;

	if (c->batch_written)
		finish_batch(c);
	else
		start_batch(c);
	for (n = 0; poll_for_bios(c); n++) {
		if (n == CHJ_WORKER_BATCHES) {
			queue_work(c->wq, &c->worker);
			return;
		}
		start_batch(c);
		cond_resched();
	}
}

/*
 * For the worker when commits are offloaded: a CPU other than this one that
 * may run workqueues (not isolated from them), or -1 if there is none.
 */
static int other_cpu(void)
{
	const struct cpumask *hk = housekeeping_cpumask(HK_TYPE_WQ);
	int self = raw_smp_processor_id();
	int cpu = cpumask_next_and(self, cpu_online_mask, hk);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first_and(cpu_online_mask, hk);
	return cpu < nr_cpu_ids && cpu != self ? cpu : -1;
}

/*
 * With defer_lock: should this first-touch write's batch run in the worker
 * on another CPU?  Only when the metadata device completes in its submitter
 * (a RAM disk): then committing inline costs the submitter a whole bitmap
 * write per write, while a worker on another CPU commits in parallel with
 * submitters that do not wait for their writes (async I/O, several
 * threads).  A synchronous writer gains nothing from a second CPU and pays
 * for the wake-ups, so offload needs evidence of such a submitter:
 *
 * - a write is "alone" if no other first-touch write is pending;
 * - a submitter "waited" if it slept since its last first-touch write.
 *
 * With commits inline, a submitter never overlaps its own writes, so every
 * CHJ_PROBE_INTERVAL one write is offloaded; offload starts if the next
 * write comes before it ends.  Offloaded, CHJ_SERIAL_EXIT writes in a row
 * that are alone and waited for end it.
 */
static bool choose_offload(struct chj_target *c, bool alone)
{
	bool waited = !awake_since(&c->last_submitter);

	mark_task(&c->last_submitter);
	if (!READ_ONCE(c->md_sync) || !READ_ONCE(commit_poll_us) ||
	    num_online_cpus() < 2) {
		c->offload = false;
		return false;
	}
	if (c->offload) {
		if (!alone || !waited)
			c->serial = 0;
		else if (++c->serial >= CHJ_SERIAL_EXIT)
			c->offload = false;
		return c->offload;
	}
	if (!alone) {
		c->offload = true;
		c->serial = 0;
		return true;
	}
	if (time_before(jiffies, c->next_probe))
		return false;
	c->next_probe = jiffies + CHJ_PROBE_INTERVAL;
	return true;
}

/*
 * Queue a first-touch bio for the next batch, and start that batch if none
 * is in flight.  Not deferred to unplug: a synchronous writer sleeps inside
 * its plug, and a batch started from schedule() would need the worker.
 */
static void defer_bio(struct chj_target *c, struct bio *bio)
{
	struct chj_bio *pb = dm_per_bio_data(bio, sizeof(*pb));
	unsigned long flags;
	bool alone, remote, start;
	int cpu;

	pb->first_touch = true;
	alone = atomic_inc_return(&c->ft_pending) == 1;
	atomic64_inc(&c->deferred_bios);
	spin_lock_irqsave(&c->defer_lock, flags);
	bio_list_add(&c->deferred, bio);
	remote = choose_offload(c, alone);
	start = !c->polling && take_token(c);
	spin_unlock_irqrestore(&c->defer_lock, flags);
	if (remote)
		atomic64_inc(&c->offloaded_bios);
	if (!start)
		return;
	cpu = remote ? other_cpu() : -1;
	if (cpu >= 0)
		queue_work_on(cpu, c->wq, &c->worker);
	else
		start_batch(c);
}

static int chj_map(struct dm_target *ti, struct bio *bio)
{
	struct chj_target *c = ti->private;
	struct chj_bio *pb = dm_per_bio_data(bio, sizeof(*pb));
	u64 first, last;

	pb->counted = false;
	pb->first_touch = false;
	bio_set_dev(bio, c->origin_dev->bdev);
	bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	if (!bio_writes_data(bio))
		return DM_MAPIO_REMAPPED;
	if (READ_ONCE(c->failed))
		return DM_MAPIO_KILL;

	bio_regions(c, bio, &first, &last);
	/*
	 * Count the bio in flight before looking at ckpt_pending; checkpoint()
	 * sets ckpt_pending before reading in_flight.  With a full barrier on
	 * both sides, either it waits for this bio or this bio sees the flag.
	 */
	atomic_inc(&c->in_flight);
	smp_mb__after_atomic(); /* in_flight before ckpt_pending, as above */
	/* Acquire: a cleared flag means the cleared bitmap is visible too. */
	if (!smp_load_acquire(&c->ckpt_pending) &&
	    chj_md_durable(c->md, first, last)) {
		pb->counted = true;
		return DM_MAPIO_REMAPPED;
	}
	put_in_flight(c);
	defer_bio(c, bio);
	return DM_MAPIO_SUBMITTED;
}

static int chj_end_io(struct dm_target *ti, struct bio *bio,
		      blk_status_t *error)
{
	struct chj_bio *pb = dm_per_bio_data(bio, sizeof(*pb));
	struct chj_target *c = ti->private;

	if (pb->first_touch)
		atomic_dec(&c->ft_pending);
	if (pb->counted)
		put_in_flight(c);
	return DM_ENDIO_DONE;
}

/* ------------------------------------------------------------ messages -- */

/*
 * End the epoch.  New writes are diverted to the next batch, which cannot
 * start while commits are paused; the batch in flight is waited for, and so
 * is every write already issued: a write still in flight when the new epoch
 * starts could land after a backup read its region, so it must not be left
 * to the old epoch alone.  Writes held meanwhile are marked in the new one.
 */
static int checkpoint(struct chj_target *c, u64 *epoch)
{
	int r;

	WRITE_ONCE(c->ckpt_pending, true);
	/* Flag before counter; pairs with smp_mb__after_atomic() in chj_map(). */
	smp_mb();
	pause_commits(c);
	wait_event(c->drain_wq, !atomic_read(&c->in_flight));
	r = chj_md_checkpoint(c->md, epoch);
	if (r)
		enter_fail_mode(c, "checkpoint", r);
	/* Release: the cleared bitmap is visible before the fast path reopens. */
	smp_store_release(&c->ckpt_pending, false);
	resume_commits(c);
	return r;
}

/* Counters for benchmarks and troubleshooting, as key=value pairs. */
static int stats(struct chj_target *c, char *result, unsigned int maxlen)
{
	struct chj_md_stats st = {};

	if (c->md)
		chj_md_stats(c->md, &st);
	scnprintf(result, maxlen,
		  "deferred_bios=%llu commits=%llu bitmap_writes=%llu journal_writes=%llu superblock_writes=%llu offloaded_bios=%llu",
		  (u64)atomic64_read(&c->deferred_bios), READ_ONCE(c->commits),
		  st.bitmap_writes, st.journal_writes, st.sb_writes,
		  (u64)atomic64_read(&c->offloaded_bios));
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
			  strcasecmp(argv[0], "stats"))) {
		DMWARN("unrecognised message: expected checkpoint, mark_all or stats");
		return -EINVAL;
	}
	mutex_lock(&c->lock);
	if (!strcasecmp(argv[0], "stats")) {
		r = stats(c, result, maxlen);
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
		pause_commits(c);
		r = chj_md_mark_all(c->md);
		if (r)
			enter_fail_mode(c, "mark_all", r);
		resume_commits(c);
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
		if (c->mark_ahead)
			DMEMIT(" 2 mark_ahead %u", c->mark_ahead);
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",metadata_device=%s,origin_device=%s,region_sectors=%u,mark_ahead=%u;",
		       c->metadata_dev->name, c->origin_dev->name,
		       c->region_sectors, c->mark_ahead);
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

	/*
	 * dm has waited for every bio, but the token's holder may still be
	 * giving it back.  The worker may take the lock, so flush it first.
	 * Commits stay paused until resume.
	 */
	flush_workqueue(c->wq);
	mutex_lock(&c->lock);
	pause_commits(c);
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
			 mark_all, &error);
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
	resume_commits(c);
	mutex_unlock(&c->lock);
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

/* [<#feature args> <feature arg>*]: only "mark_ahead <regions>" so far. */
static int parse_features(struct dm_target *ti, struct chj_target *c,
			  unsigned int argc, char **argv)
{
	unsigned int nfeat, i;

	if (kstrtouint(argv[0], 10, &nfeat) || nfeat != argc - 1) {
		ti->error = "Feature argument count does not match";
		return -EINVAL;
	}
	for (i = 1; i < argc; i++) {
		if (!strcasecmp(argv[i], "mark_ahead") && i + 1 < argc) {
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

	if (c->wq)
		destroy_workqueue(c->wq);
	chj_md_close(c->md);
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
	struct chj_target *c = kzalloc(sizeof(*c), GFP_KERNEL);
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
	bio_list_init(&c->batch);
	INIT_WORK(&c->worker, do_worker);
	init_waitqueue_head(&c->drain_wq);
	c->suspended = true;
	c->paused = true;
	c->next_probe = jiffies;
	c->failed_rec = kzalloc(sizeof(*c->failed_rec), GFP_KERNEL);
	if (!c->failed_rec) {
		ti->error = "Cannot allocate target";
		r = -ENOMEM;
		goto bad;
	}

	r = chj_parse_args(ti, c, argc, argv);
	if (!r)
		r = check_metadata(ti, c);
	if (r)
		goto bad;
	c->wq = alloc_workqueue("dm-" DM_MSG_PREFIX, WQ_MEM_RECLAIM, 0);
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
	.version = {1, 0, 0},
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
	int r = chj_md_init();

	if (r)
		return r;
	r = dm_register_target(&chj_target);
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
