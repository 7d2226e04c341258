// SPDX-License-Identifier: GPL-2.0 OR MIT
#include "cli.h"

int main(int argc, char **argv)
{
	return chj_main(argc, argv);
}
