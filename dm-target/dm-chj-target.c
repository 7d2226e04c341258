// SPDX-License-Identifier: GPL-2.0
/* Placeholder pass-through target; replaced by the tracking target. */
#include <linux/module.h>
#include <linux/device-mapper.h>

#define DM_MSG_PREFIX "chj"

static int chj_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dm_dev *dev;
	int r;

	if (argc < 1) {
		ti->error = "Missing device";
		return -EINVAL;
	}
	r = dm_get_device(ti, argv[0], dm_table_get_mode(ti->table), &dev);
	if (r) {
		ti->error = "Cannot open device";
		return r;
	}
	ti->private = dev;
	return 0;
}

static void chj_dtr(struct dm_target *ti)
{
	dm_put_device(ti, ti->private);
}

static int chj_map(struct dm_target *ti, struct bio *bio)
{
	struct dm_dev *dev = ti->private;

	bio_set_dev(bio, dev->bdev);
	return DM_MAPIO_REMAPPED;
}

static struct target_type chj_target = {
	.name = "chj",
	.version = {0, 0, 1},
	.module = THIS_MODULE,
	.ctr = chj_ctr,
	.dtr = chj_dtr,
	.map = chj_map,
};

static int __init dm_chj_init(void)
{
	return dm_register_target(&chj_target);
}

static void __exit dm_chj_exit(void)
{
	dm_unregister_target(&chj_target);
}

module_init(dm_chj_init);
module_exit(dm_chj_exit);
MODULE_DESCRIPTION(DM_NAME " change journal target");
MODULE_LICENSE("GPL");
