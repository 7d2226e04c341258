// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Welch's t-test for the benchmark database.  The two-sided p-value of
 * Student's t with df degrees of freedom is I_{df/(df+t^2)}(df/2, 1/2), the
 * regularized incomplete beta function, evaluated by its continued fraction
 * (modified Lentz), as in Numerical Recipes' betai/betacf.
 */
#include <math.h>

#include "stats.h"

void stats_summary(const double *x, size_t n, struct sample_summary *s)
{
	double sum = 0, ss = 0, m;
	size_t i;

	s->n = n;
	s->mean = s->sd = 0;
	if (!n)
		return;
	for (i = 0; i < n; i++)
		sum += x[i];
	m = sum / n;
	for (i = 0; i < n; i++)
		ss += (x[i] - m) * (x[i] - m);
	s->mean = m;
	s->sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
}

/* Continued fraction for I_x(a, b); converges fast for x < (a+1)/(a+b+2). */
static double betacf(double x, double a, double b)
{
	const double tiny = 1e-300, eps = 1e-15;
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap, h, aa, del;
	int m, m2;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (m = 1; m <= 1000; m++) {
		m2 = 2 * m;
		aa = m * (b - m) * x / ((qam + m2) * (a + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < eps)
			break;
	}
	return h;
}

double stats_incbeta(double x, double a, double b)
{
	double lbt;

	if (isnan(x) || a <= 0 || b <= 0)
		return NAN;
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	/* x^a (1-x)^b / (a B(a,b)), computed in logs. */
	lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	if (x < (a + 1) / (a + b + 2))
		return exp(lbt) * betacf(x, a, b) / a;
	return 1 - exp(lbt) * betacf(1 - x, b, a) / b;
}

double stats_t_p2(double t, double df)
{
	if (isnan(t) || isnan(df) || df <= 0)
		return NAN;
	if (isinf(t))
		return 0;
	return stats_incbeta(df / (df + t * t), df / 2, 0.5);
}

void stats_welch(const struct sample_summary *a, const struct sample_summary *b,
		 struct welch *w)
{
	double va, vb, se2;

	w->t = w->df = w->p = NAN;
	if (a->n < 2 || b->n < 2)
		return;
	va = a->sd * a->sd / a->n;
	vb = b->sd * b->sd / b->n;
	se2 = va + vb;
	if (se2 == 0) {
		w->df = (double)(a->n + b->n - 2);
		if (a->mean == b->mean) {
			w->t = 0;
			w->p = 1;
		} else {
			w->t = a->mean > b->mean ? INFINITY : -INFINITY;
			w->p = 0;
		}
		return;
	}
	w->t = (a->mean - b->mean) / sqrt(se2);
	w->df = se2 * se2 / (va * va / (a->n - 1) + vb * vb / (b->n - 1));
	w->p = stats_t_p2(w->t, w->df);
}
