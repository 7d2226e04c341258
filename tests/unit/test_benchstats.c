// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The benchmark database's statistics (scripts/bench-db/stats.c): mean and
 * standard deviation, the regularized incomplete beta function, Student's t
 * two-sided p-values and Welch's t-test, against closed forms and against
 * R's t.test (reference values recomputed with mpmath at 30 digits).
 */
#include <math.h>

#include "suites.h"
#include "stats.h"	/* scripts/bench-db: built and linked by userspace/Makefile */

#define near(got, want, tol) ck_assert_msg(fabs((got) - (want)) <= (tol), \
	"%s = %.12g, want %.12g (tol %g)", #got, (double)(got), (double)(want), (double)(tol))

static void welch_of(const double *a, size_t na, const double *b, size_t nb, struct welch *w)
{
	struct sample_summary sa, sb;

	stats_summary(a, na, &sa);
	stats_summary(b, nb, &sb);
	stats_welch(&sa, &sb, w);
}

START_TEST(summary_basic)
{
	const double x[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct sample_summary s;

	stats_summary(x, 8, &s);
	ck_assert_uint_eq(s.n, 8);
	near(s.mean, 5, 1e-12);
	near(s.sd, sqrt(32.0 / 7), 1e-12);
	stats_summary(x, 1, &s);
	near(s.mean, 2, 0);
	near(s.sd, 0, 0);
	stats_summary(x, 0, &s);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

START_TEST(incbeta_closed_forms)
{
	for (double x = 0.05; x < 1; x += 0.1) {
		near(stats_incbeta(x, 1, 1), x, 1e-13);		/* uniform */
		near(stats_incbeta(x, 3, 1), pow(x, 3), 1e-13);	/* x^a */
		near(stats_incbeta(x, 1, 4), 1 - pow(1 - x, 4), 1e-13);
		/* symmetry I_x(a,b) = 1 - I_{1-x}(b,a) */
		near(stats_incbeta(x, 2.5, 7), 1 - stats_incbeta(1 - x, 7, 2.5), 1e-13);
	}
	near(stats_incbeta(0, 2, 3), 0, 0);
	near(stats_incbeta(1, 2, 3), 1, 0);
	ck_assert(isnan(stats_incbeta(0.5, 0, 1)));
}
END_TEST

START_TEST(incbeta_reference)
{
	/* mpmath betainc(a, b, 0, x, regularized=True) */
	near(stats_incbeta(0.3, 2, 3), 0.3483, 1e-13);
	near(stats_incbeta(0.9, 0.5, 0.5), 0.795167235300866571910466459587, 1e-13);
	near(stats_incbeta(0.5, 100, 100), 0.5, 1e-12);
	ck_assert(stats_incbeta(0.01, 50, 0.5) < 1e-100);
}
END_TEST

START_TEST(t_pvalues_closed_forms)
{
	/* df = 1 is Cauchy: P(|T| >= t) = 1 - 2 atan(t) / pi. */
	near(stats_t_p2(1, 1), 0.5, 1e-13);
	near(stats_t_p2(3, 1), 1 - 2 * atan(3) / M_PI, 1e-13);
	/* df = 2: P(|T| >= t) = 1 - t / sqrt(t^2 + 2). */
	for (double t = 0.25; t < 20; t *= 1.7)
		near(stats_t_p2(t, 2), 1 - t / sqrt(t * t + 2), 1e-12);
	near(stats_t_p2(0, 7), 1, 1e-15);
	near(stats_t_p2(-2.5, 9), stats_t_p2(2.5, 9), 0);
	/* Textbook critical values: two-sided 5 % and 1 %. */
	near(stats_t_p2(2.570582, 5), 0.05, 1e-6);
	near(stats_t_p2(2.228139, 10), 0.05, 1e-6);
	near(stats_t_p2(3.169273, 10), 0.01, 1e-6);
	near(stats_t_p2(1.959964, 1e9), 0.05, 1e-6);	/* -> normal */
	ck_assert(stats_t_p2(INFINITY, 4) == 0);
	ck_assert(isnan(stats_t_p2(1, 0)));
}
END_TEST

/* R: t.test(extra ~ group, data = sleep): t = -1.8608, df = 17.776, p-value = 0.07939 */
START_TEST(welch_r_sleep)
{
	const double g1[] = { 0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0 };
	const double g2[] = { 1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4 };
	struct welch w;

	welch_of(g1, 10, g2, 10, &w);
	near(w.t, -1.86081346748685276502549014199594, 1e-12);
	near(w.df, 17.7764735161784902404901000261312, 1e-10);
	near(w.p, 0.079394140187358188041790379016582, 1e-10);
}
END_TEST

/* R: t.test(1:5, c(2,4,6,8,10)): t = -1.8974, df = 5.8824, p-value = 0.1075 */
START_TEST(welch_r_small)
{
	const double a[] = { 1, 2, 3, 4, 5 }, b[] = { 2, 4, 6, 8, 10 };
	const double c[] = { 41200, 40800, 42100, 40500, 41900 };
	const double d[] = { 39900, 40100, 39500, 40300, 39700 };
	struct welch w;

	welch_of(a, 5, b, 5, &w);
	near(w.t, -1.89736659610102759919933612665965, 1e-12);
	near(w.df, 5.88235294117647058823529411764697, 1e-10);
	near(w.p, 0.107531194930627240414182010210158, 1e-10);
	/* IOPS-like samples, unequal variances */
	welch_of(c, 5, d, 5, &w);
	near(w.t, 4.12837477233711973682190385098985, 1e-10);
	near(w.df, 5.61273209549071618037135278514588, 1e-9);
	near(w.p, 0.00710872113734839672693182676707108, 1e-10);
}
END_TEST

START_TEST(welch_degenerate)
{
	const double a[] = { 3, 3, 3 }, b[] = { 3, 3 }, c[] = { 4, 4, 4 };
	struct welch w;

	welch_of(a, 3, b, 2, &w);
	near(w.p, 1, 0);
	welch_of(a, 3, c, 3, &w);
	near(w.p, 0, 0);
	ck_assert(isinf(w.t) && w.t < 0);
	welch_of(a, 1, c, 3, &w);	/* n < 2: no test */
	ck_assert(isnan(w.p));
}
END_TEST

Suite *suite_benchstats(void)
{
	Suite *s = suite_create("benchstats");
	TCase *tc = tcase_create("welch");

	tcase_add_test(tc, summary_basic);
	tcase_add_test(tc, incbeta_closed_forms);
	tcase_add_test(tc, incbeta_reference);
	tcase_add_test(tc, t_pvalues_closed_forms);
	tcase_add_test(tc, welch_r_sleep);
	tcase_add_test(tc, welch_r_small);
	tcase_add_test(tc, welch_degenerate);
	suite_add_tcase(s, tc);
	return s;
}
