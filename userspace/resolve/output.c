// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Printing the answer: one absolute path per line (escaped when it holds a
 * newline, carriage return or backslash), NUL-separated, or JSON Lines.
 * Everything is computed before this runs; paths are sorted bytewise.
 */
#include <stdlib.h>
#include <string.h>

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

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0], cp;
	int n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* No overlong forms, no surrogates, nothing past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void out_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		int n = utf8_len(p);

		if (!n) {
			/* Not UTF-8: the byte as a lone low surrogate, as
			 * Python's surrogateescape reads it back. */
			fprintf(f, "\\udc%02x", *p);
			p++;
			continue;
		}
		if (n > 1) {
			fwrite(p, 1, n, f);
			p += n;
			continue;
		}
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
		p++;
	}
	fputc('"', f);
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
	out_json_string(f, abs);
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
		fputs(", \"ranges\": [", f);
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
