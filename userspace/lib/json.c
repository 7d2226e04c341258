// SPDX-License-Identifier: GPL-2.0 OR MIT
/* JSON strings for every JSON output of chj and chj-resolve. */
#include <stdio.h>

#include "libchj.h"

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

void chj_json_str(FILE *f, const char *s)
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
