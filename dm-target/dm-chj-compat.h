/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-chj-compat.h: where the kernel APIs dm-chj uses differ between the
 * kernels it supports (Debian 12's 6.1 and 6.12), in this one place; the
 * rest of the code is written against the newer API.  Each difference is
 * detected by what the headers define, not by version number, so that
 * a kernel with the change backported works too.
 */
#ifndef DM_CHJ_COMPAT_H
#define DM_CHJ_COMPAT_H

#include <linux/blkdev.h>

/*
 * 6.5 gave block device open modes their own type, blk_mode_t (BLK_OPEN_*),
 * for fmode_t (FMODE_*): dm_table_get_mode() and dm_get_device() use it.
 */
#ifndef BLK_OPEN_READ
#define blk_mode_t fmode_t
#endif

#endif /* DM_CHJ_COMPAT_H */
