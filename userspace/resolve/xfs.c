// SPDX-License-Identifier: GPL-2.0 OR MIT
#include "resolve.h"

int xfs_resolve(struct resolver *r)
{
	return rx_fail(r, RX_FULL_SCAN, "XFS is not supported yet");
}
