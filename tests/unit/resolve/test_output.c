// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Output escaping: lines (sha256sum style) and JSON strings. */
#include <stdlib.h>
#include <string.h>

#include "libchj.h"
#include "resolve.h"
#include "suites.h"

static char *escaped_line(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	out_escape_line(f, path);
	fclose(f);
	return buf;
}

static char *json_escaped(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	chj_json_str(f, s);
	fclose(f);
	return buf;
}

#define CHECK_LINE(in, want) do { char *g = escaped_line(in); ck_assert_str_eq(g, want); free(g); } while (0)
#define CHECK_JSON(in, want) do { char *g = json_escaped(in); ck_assert_str_eq(g, want); free(g); } while (0)

START_TEST(plain_paths_are_literal)
{
	CHECK_LINE("/mnt/a b/c", "/mnt/a b/c\n");
	CHECK_LINE("/mnt/tab\there", "/mnt/tab\there\n");
	CHECK_LINE("/", "/\n");
}
END_TEST

START_TEST(newline_backslash_cr_escaped)
{
	CHECK_LINE("/mnt/new\nline", "\\/mnt/new\\nline\n");
	CHECK_LINE("/mnt/back\\slash", "\\/mnt/back\\\\slash\n");
	CHECK_LINE("/mnt/cr\rx", "\\/mnt/cr\\rx\n");
	/* A literal "\n" (backslash, n) must not read back as a newline. */
	CHECK_LINE("/mnt/lit\\n", "\\/mnt/lit\\\\n\n");
}
END_TEST

START_TEST(json_escapes)
{
	CHECK_JSON("/a\"b\\c", "\"/a\\\"b\\\\c\"");
	CHECK_JSON("x\ny\tz\r", "\"x\\ny\\tz\\r\"");
	CHECK_JSON("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
}
END_TEST

START_TEST(json_utf8_passes_invalid_bytes_surrogate_escaped)
{
	CHECK_JSON("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	CHECK_JSON("\xff", "\"\\udcff\"");
	CHECK_JSON("a\xc3", "\"a\\udcc3\"");		/* truncated sequence */
	CHECK_JSON("\xc0\xaf", "\"\\udcc0\\udcaf\"");	/* overlong */
	CHECK_JSON("\xed\xa0\x80", "\"\\udced\\udca0\\udc80\"");	/* surrogate */
	CHECK_JSON("\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\"");	/* > U+10FFFF */
}
END_TEST

Suite *suite_output(void)
{
	Suite *s = suite_create("output");
	TCase *t = tcase_create("escaping");

	tcase_add_test(t, plain_paths_are_literal);
	tcase_add_test(t, newline_backslash_cr_escaped);
	tcase_add_test(t, json_escapes);
	tcase_add_test(t, json_utf8_passes_invalid_bytes_surrogate_escaped);
	suite_add_tcase(s, t);
	return s;
}
