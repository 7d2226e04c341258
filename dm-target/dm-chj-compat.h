/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-chj-compat.h: where the kernel APIs dm-chj uses differ between the
 * kernels it supports (6.1, 6.12 and the newest Debian ships, 7.3 today),
 * in this one place; the rest of the code is written against the newest
 * API.  Each difference is detected by what the headers define, not by
 * version number, so that a kernel with the change backported works too.
 * Each shim names the change it covers; make check builds the module on
 * kernels on both sides of each (6.1 and 6.12 before, 7.3 after the last),
 * and its compat control (scripts/compat-control) proves that the newest
 * kernel's build would catch a shim that only compiles on the old side.
 * The in-tree form (scripts/mkpatch) has none of this.
 */
#ifndef DM_CHJ_COMPAT_H
#define DM_CHJ_COMPAT_H

#include <linux/blkdev.h>
#include <linux/slab.h>

/*
 * 6.5 gave block device open modes their own type, blk_mode_t (BLK_OPEN_*),
 * for fmode_t (FMODE_*): dm_table_get_mode() and dm_get_device() use it.
 */
#ifndef BLK_OPEN_READ
#define blk_mode_t fmode_t
#endif

/*
 * 7.0 added typed allocators to <linux/slab.h>, kzalloc_obj(VAR_OR_TYPE[,
 * GFP]) and family (Debian's 6.12.118 has them too, from the stable
 * series), and checkpatch (7.x) prefers them to kzalloc(sizeof(), ...).
 * Before (6.1): the same allocation spelt out, one-argument form only
 * (GFP_KERNEL), the only one dm-chj uses; untyped (void *), as kzalloc is.
 */
/*
 * 6.17 added WQ_PERCPU (Debian's 6.12.118 has it from the stable series),
 * to be said where a workqueue must stay per-CPU before unbound becomes
 * the default, and 7.x's alloc_workqueue() warns about a workqueue with
 * neither WQ_PERCPU nor WQ_UNBOUND.  dm-chj's worker stays per-CPU, as it
 * has always been.  Before (6.1): per-CPU was the default, the flag 0.
 * An enum constant: the Kbuild file greps the header (CHJ_HAVE_WQ_PERCPU).
 */
#ifndef CHJ_HAVE_WQ_PERCPU
#define WQ_PERCPU 0
#endif

#ifndef kzalloc_obj
#define kzalloc_obj(p) kzalloc(sizeof(p), GFP_KERNEL)
#endif
#ifndef kvzalloc_obj
#define kvzalloc_obj(p) kvzalloc(sizeof(p), GFP_KERNEL)
#endif

#endif /* DM_CHJ_COMPAT_H */
