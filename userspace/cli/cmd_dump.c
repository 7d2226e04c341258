// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj dump: superblocks, journal records per epoch, current marks. */
#include <string.h>
#include <time.h>

#include "cli.h"

/* Seconds since 1970 as "N (YYYY-MM-DD HH:MM:SS UTC)". */
static const char *when(uint64_t secs, char *buf, size_t len)
{
	time_t t = (time_t)secs;
	struct tm tm;
	char iso[32];

	if ((uint64_t)t != secs || !gmtime_r(&t, &tm) ||
	    !strftime(iso, sizeof(iso), "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "%llu", (unsigned long long)secs);
	else
		snprintf(buf, len, "%llu (%s)", (unsigned long long)secs, iso);
	return buf;
}

static const char *copy_state(const struct chj_sb_copies *cp, unsigned i)
{
	return cp->state[i] == CHJ_SB_VALID ? "valid" : cp->why[i];
}

static void dump_text(const struct chj_dump *d, const char *path)
{
	const struct chj_sb *sb = &d->sb;
	char uuid[37], h1[32], h2[32], t1[64], t2[64];

	chj_uuid_str(sb->uuid, uuid);
	printf("%s: chj metadata version %u\n", path, sb->version);
	for (unsigned i = 0; i < CHJ_SB_COPIES; i++)
		printf("  superblock copy %u: %s%s\n", i, copy_state(&d->copies, i),
		       (int)i == d->copies.best ? " (in force)" : "");
	printf("  seq               %llu\n", (unsigned long long)sb->seq);
	printf("  uuid              %s\n", uuid);
	printf("  flags             %s%s%s\n",
	       sb->flags & CHJ_SB_F_ALL_CHANGED ? "all-changed" : "",
	       (sb->flags & CHJ_SB_F_ALL_CHANGED) && (sb->flags & CHJ_SB_F_COARSE) ? "," : "",
	       sb->flags & CHJ_SB_F_COARSE ? "coarse (unclean stop: whole chunks counted)" :
	       sb->flags & CHJ_SB_F_ALL_CHANGED ? "" : "none");
	if (sb->version >= 2)
		printf("  intent map        %llu chunks of %llu regions marked\n",
		       (unsigned long long)chj_sb_marked_chunks(sb),
		       1ull << sb->chunk_shift);
	printf("  region size       %s (%u sectors)\n",
	       chj_human_size((uint64_t)sb->region_sectors << 9, h1, sizeof(h1)), sb->region_sectors);
	/* The chunk of the superblock in force: dm-chj commits its table's. */
	if (sb->version >= 2)
		printf("  chunk size        %s (%llu regions)\n",
		       chj_human_size((uint64_t)sb->region_sectors << 9 << sb->chunk_shift,
				      h1, sizeof(h1)), 1ull << sb->chunk_shift);
	printf("  origin            %s (%llu sectors, %llu regions)\n",
	       chj_human_size(sb->origin_sectors << 9, h2, sizeof(h2)),
	       (unsigned long long)sb->origin_sectors, (unsigned long long)sb->nr_regions);
	printf("  metadata blocks   %llu (bitmap %llu+%llu, journal %llu+%llu)\n",
	       (unsigned long long)sb->metadata_blocks,
	       (unsigned long long)sb->bitmap_start, (unsigned long long)sb->bitmap_blocks,
	       (unsigned long long)sb->journal_start, (unsigned long long)sb->journal_blocks);
	printf("  epochs            current %llu, oldest retained %llu\n",
	       (unsigned long long)sb->current_epoch, (unsigned long long)sb->oldest_epoch);
	printf("  journal           head %llu, tail %llu (%llu of %llu blocks used)%s\n",
	       (unsigned long long)sb->journal_head, (unsigned long long)sb->journal_tail,
	       (unsigned long long)(sb->journal_tail - sb->journal_head),
	       (unsigned long long)sb->journal_blocks,
	       d->journal_ok ? "" : " DAMAGED: run chj check");
	printf("  format time       %s\n  epoch start time  %s\n",
	       when(sb->format_time, t1, sizeof(t1)),
	       when(sb->epoch_start_time, t2, sizeof(t2)));
	printf("\n%10s %10s %10s %12s\n", "EPOCH", "BLOCKS", "EXTENTS", "REGIONS");
	for (size_t i = 0; i < d->nr_epochs; i++)
		printf("%10llu %10llu %10llu %12llu\n",
		       (unsigned long long)d->epochs[i].epoch,
		       (unsigned long long)d->epochs[i].blocks,
		       (unsigned long long)d->epochs[i].extents,
		       (unsigned long long)d->epochs[i].regions);
	printf("%10llu %10s %10s %12llu  (current, bitmap)\n",
	       (unsigned long long)sb->current_epoch, "-", "-",
	       (unsigned long long)d->current_marked);
	if (d->damaged_bitmap_blocks)
		printf("  %llu damaged bitmap blocks, counted as all changed: run chj check\n",
		       (unsigned long long)d->damaged_bitmap_blocks);
}

static void dump_json(const struct chj_dump *d, const char *path)
{
	const struct chj_sb *sb = &d->sb;
	char uuid[37];

	chj_uuid_str(sb->uuid, uuid);
	printf("{\"path\": ");
	chj_json_str(stdout, path);
	printf(", \"version\": %u, \"chunk_regions\": %llu, \"marked_chunks\": %llu, \"coarse\": %s, \"superblock_copies\": [",
	       sb->version, sb->version >= 2 ? 1ull << sb->chunk_shift : 0ull,
	       (unsigned long long)chj_sb_marked_chunks(sb),
	       sb->flags & CHJ_SB_F_COARSE ? "true" : "false");
	for (unsigned i = 0; i < CHJ_SB_COPIES; i++) {
		printf("%s", i ? ", " : "");
		chj_json_str(stdout, copy_state(&d->copies, i));
	}
	printf("], \"copy_in_force\": %d, \"seq\": %llu, \"uuid\": \"%s\", \"all_changed\": %s,\n",
	       d->copies.best, (unsigned long long)sb->seq, uuid,
	       sb->flags & CHJ_SB_F_ALL_CHANGED ? "true" : "false");
	printf(" \"region_sectors\": %u, \"region_size_bytes\": %llu, \"chunk_size_bytes\": %llu, "
	       "\"origin_sectors\": %llu, \"nr_regions\": %llu,\n",
	       sb->region_sectors, (unsigned long long)sb->region_sectors << CHJ_SECTOR_SHIFT,
	       sb->version >= 2 ?
	       (unsigned long long)sb->region_sectors << CHJ_SECTOR_SHIFT << sb->chunk_shift : 0ull,
	       (unsigned long long)sb->origin_sectors, (unsigned long long)sb->nr_regions);
	printf(" \"metadata_blocks\": %llu, \"bitmap_start_block\": %llu, \"bitmap_blocks\": %llu, "
	       "\"journal_start_block\": %llu, \"journal_blocks\": %llu,\n",
	       (unsigned long long)sb->metadata_blocks, (unsigned long long)sb->bitmap_start,
	       (unsigned long long)sb->bitmap_blocks, (unsigned long long)sb->journal_start,
	       (unsigned long long)sb->journal_blocks);
	printf(" \"current_epoch\": %llu, \"oldest_epoch\": %llu, \"journal_head_seq\": %llu, "
	       "\"journal_tail_seq\": %llu, \"journal_ok\": %s,\n",
	       (unsigned long long)sb->current_epoch, (unsigned long long)sb->oldest_epoch,
	       (unsigned long long)sb->journal_head, (unsigned long long)sb->journal_tail,
	       d->journal_ok ? "true" : "false");
	printf(" \"format_time\": %llu, \"epoch_start_time\": %llu, \"current_marked_regions\": %llu, "
	       "\"damaged_bitmap_blocks\": %llu,\n",
	       (unsigned long long)sb->format_time, (unsigned long long)sb->epoch_start_time,
	       (unsigned long long)d->current_marked,
	       (unsigned long long)d->damaged_bitmap_blocks);
	/* The keys of release 1.0.0, kept for one release (docs/json.md). */
	printf(" \"bitmap_start\": %llu, \"journal_start\": %llu, \"journal_head\": %llu, "
	       "\"journal_tail\": %llu, \"current_marked\": %llu,\n \"epochs\": [",
	       (unsigned long long)sb->bitmap_start, (unsigned long long)sb->journal_start,
	       (unsigned long long)sb->journal_head, (unsigned long long)sb->journal_tail,
	       (unsigned long long)d->current_marked);
	for (size_t i = 0; i < d->nr_epochs; i++)
		printf("%s\n  {\"epoch\": %llu, \"blocks\": %llu, \"extents\": %llu, \"regions\": %llu}",
		       i ? "," : "", (unsigned long long)d->epochs[i].epoch,
		       (unsigned long long)d->epochs[i].blocks,
		       (unsigned long long)d->epochs[i].extents,
		       (unsigned long long)d->epochs[i].regions);
	printf("%s]}\n", d->nr_epochs ? "\n" : "");
}

int cmd_dump(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ 0 }
	};
	const struct chj_cmd *c = chj_find_cmd("dump");
	struct chj_error e = { 0 };
	struct chj_meta *m = NULL;
	struct chj_dump d;
	int opt, as_json = 0, rc;

	while ((opt = cli_getopt(c, argc, argv, "", lo)) != -1) {
		if (opt != 'j')
			return c->usage_exit;
		as_json = 1;
	}
	if (optind != argc - 1)
		return cli_usage(c, optind == argc ? "METADATA_DEV is required" : "too many arguments");
	rc = chj_meta_open(&m, argv[optind], 0, &e);
	if (!rc)
		rc = chj_dump_collect(m, &d, &e);
	chj_meta_close(m);
	if (rc)
		return cli_fail(&e);
	if (as_json)
		dump_json(&d, argv[optind]);
	else
		dump_text(&d, argv[optind]);
	chj_dump_free(&d);
	return cli_finish(EXIT_OK);
}
