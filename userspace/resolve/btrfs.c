// SPDX-License-Identifier: GPL-2.0 OR MIT
#include "resolve.h"

int btrfs_resolve(struct resolver *r)
{
	return rx_fail(r, RX_FULL_SCAN, "btrfs is not supported yet");
}
