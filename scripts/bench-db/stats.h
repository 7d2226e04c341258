/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Statistics for chj's benchmark database: mean, sample standard deviation,
 * and Welch's unequal-variances t-test with a two-sided p-value from the
 * regularized incomplete beta function.
 */
#ifndef CHJ_BENCH_STATS_H
#define CHJ_BENCH_STATS_H
#include <stddef.h>

struct sample_summary {
	size_t n;
	double mean;
	double sd;	/* sample standard deviation (n - 1); 0 when n < 2 */
};

struct welch {
	double t;	/* (mean_a - mean_b) / sqrt(var_a/n_a + var_b/n_b) */
	double df;	/* Welch-Satterthwaite degrees of freedom */
	double p;	/* two-sided p-value; NAN when the test is undefined */
};

void stats_summary(const double *x, size_t n, struct sample_summary *s);

/*
 * Welch's t-test of A against B.  Undefined (p = NAN) when either side has
 * fewer than 2 samples.  When both variances are zero, p is 1 for equal
 * means and 0 otherwise (t = +-inf, df = n_a + n_b - 2).
 */
void stats_welch(const struct sample_summary *a, const struct sample_summary *b,
		 struct welch *w);

/* Regularized incomplete beta function I_x(a, b), a > 0, b > 0, 0 <= x <= 1. */
double stats_incbeta(double x, double a, double b);

/* Two-sided p-value of Student's t with df degrees of freedom: P(|T| >= |t|). */
double stats_t_p2(double t, double df);

#endif
