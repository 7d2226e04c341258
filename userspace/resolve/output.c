// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Printing the answer: one absolute path per line (escaped when it holds a
 * newline, carriage return or backslash), NUL-separated, or JSON Lines.
 * Everything is computed before this runs; paths are sorted bytewise.
 */
#include <stdlib.h>
#include <string.h>

#include "libchj.h"
#include "resolve.h"

void out_escape_line(FILE *f, const char *path)
{
	const char *p;

	if (!strpbrk(path, "\\\n\r")) {
		fputs(path, f);
		fputc('\n', f);
		return;
	}
	/* Absolute paths start with '/': a leading '\' marks an escaped one. */
	fputc('\\', f);
	for (p = path; *p; p++) {
		switch (*p) {
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		default: fputc(*p, f);
		}
	}
	fputc('\n', f);
}

struct line {
	const char *rel;
	const struct item *it;
};

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	return strcmp(x->rel, y->rel);
}

static void json_item(FILE *f, const char *abs, const struct item *it)
{
	int first = 1;

	fputs("{\"path\": ", f);
	chj_json_str(f, abs);
	fprintf(f, ", \"inode\": %llu", (unsigned long long)it->ino);
	if (it->root)
		fprintf(f, ", \"subvolume\": %llu", (unsigned long long)it->root);
	fprintf(f, ", \"type\": \"%s\", \"reasons\": [", ftype_name(it->type));
	for (unsigned b = 0; b < RSN_NR; b++) {
		if (!(it->reasons & (1u << b)))
			continue;
		fprintf(f, "%s\"%s\"", first ? "" : ", ", reason_name(b));
		first = 0;
	}
	fputc(']', f);
	if (it->type == FT_REG) {
		fputs(", \"unit\": \"bytes\", \"ranges\": [", f);
		for (size_t i = 0; i < it->ranges.n; i++)
			fprintf(f, "%s{\"start\": %llu, \"length\": %llu}",
				i ? ", " : "",
				(unsigned long long)it->ranges.v[i].start,
				(unsigned long long)it->ranges.v[i].len);
		fputc(']', f);
	}
	fputs("}\n", f);
}

int output_results(struct resolver *r, FILE *f)
{
	struct line *v = NULL;
	size_t n = 0, cap = 0, mlen = strlen(r->mnt);
	char *abs = NULL;
	size_t acap = 0;

	for (size_t i = 0; i < r->res.cap; i++) {
		const struct item *it = r->res.tab[i];

		if (!it)
			continue;
		for (uint32_t p = 0; p < it->npaths; p++) {
			xgrow((void **)&v, &cap, n + 1, sizeof(*v));
			v[n].rel = it->paths[p];
			v[n].it = it;
			n++;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_line);
	for (size_t i = 0; i < n; i++) {
		size_t rl = strlen(v[i].rel), need = mlen + rl + 2, o = mlen;

		xgrow((void **)&abs, &acap, need, 1);
		memcpy(abs, r->mnt, mlen);
		if (rl) {
			if (!mlen || abs[mlen - 1] != '/')
				abs[o++] = '/';
			memcpy(abs + o, v[i].rel, rl);
			o += rl;
		}
		abs[o] = 0;
		switch (r->out_mode) {
		case 0: out_escape_line(f, abs); break;
		case 1: fputs(abs, f); fputc(0, f); break;
		default: json_item(f, abs, v[i].it);
		}
	}
	r->st.paths_listed = n;
	free(v);
	free(abs);
	return 0;
}
