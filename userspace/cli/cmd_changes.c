// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj changes: the changed ranges since an epoch, computed whole, then printed. */
#include <string.h>

#include "cli.h"

struct opts {
	uint64_t since;
	int have_since, bytes, json;
	const char *metadata, *name;
};

static int changes_args(const struct chj_cmd *c, int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "since", required_argument, NULL, 's' },
		{ "metadata", required_argument, NULL, 'm' },
		{ "bytes", no_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 }
	};
	int opt;

	while ((opt = cli_getopt(c, argc, argv, "", lo)) != -1) {
		switch (opt) {
		case 's':
			if (chj_parse_u64(optarg, &o->since))
				return cli_usage(c, "--since %s: not an epoch number", optarg);
			o->have_since = 1;
			break;
		case 'm': o->metadata = optarg; break;
		case 'b': o->bytes = 1; break;
		case 'j': o->json = 1; break;
		default: return c->usage_exit;
		}
	}
	if (!o->have_since)
		return cli_usage(c, "--since EPOCH is required");
	return cli_source(c, argc, argv, o->metadata, &o->name);
}

static void changes_print(const struct chj_changes *ch, const struct opts *o)
{
	const struct chj_changes_info *in = chj_changes_info(ch);
	unsigned shift = o->bytes ? CHJ_SECTOR_SHIFT : 0;
	uint64_t cur = 0;
	struct chj_range r;
	int first = 1;

	/* "unit" is the unit of the ranges; every other size names its own. */
	if (o->json)
		printf("{\"since\": %llu, \"current_epoch\": %llu, \"oldest_epoch\": %llu, "
		       "\"unit\": \"%s\", \"region_size_bytes\": %llu, \"coarse\": %s, "
		       "\"marked_chunks\": %llu, \"chunk_regions\": %llu, \"ranges\": [",
		       (unsigned long long)in->since,
		       (unsigned long long)in->sb.current_epoch,
		       (unsigned long long)in->sb.oldest_epoch,
		       o->bytes ? "bytes" : "sectors",
		       (unsigned long long)in->sb.region_sectors << CHJ_SECTOR_SHIFT,
		       in->coarse ? "true" : "false",
		       (unsigned long long)in->marked_chunks,
		       (unsigned long long)in->chunk_regions);
	else if (in->coarse)
		fprintf(stderr, "chj: note: changes since %llu: an epoch was recovered coarse after an unclean stop (whole chunks of %llu regions counted): complete, with extra regions\n",
			(unsigned long long)in->since,
			(unsigned long long)(in->chunk_regions ? in->chunk_regions : 1));
	while (chj_changes_next(ch, &cur, &r)) {
		unsigned long long s = r.start << shift, l = r.len << shift;

		if (o->json)
			printf("%s\n  {\"start\": %llu, \"length\": %llu}", first ? "" : ",", s, l);
		else
			printf("%llu %llu\n", s, l);
		first = 0;
	}
	if (o->json)
		printf("%s]}\n", first ? "" : "\n");
}

int cmd_changes(int argc, char **argv)
{
	const struct chj_cmd *c = chj_find_cmd("changes");
	struct opts o = { 0 };
	struct chj_changes *ch;
	int rc = changes_args(c, argc, argv, &o);

	if (rc || (rc = cli_changes(o.metadata, o.name, o.since, &ch)))
		return rc;
	changes_print(ch, &o);
	chj_changes_free(ch);
	return cli_finish(EXIT_OK);
}
