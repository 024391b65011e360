/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * version.c - what the header gives as macros, as calls: the version of
 * the library linked in (which may differ from the header a program was
 * compiled with), and the default configuration for programs that cannot
 * use CLIO_CONF_DEFAULTS.
 */
#include <errno.h>

#include "clio.h"

const char *
clio_version(void)
{
	return CLIO_VERSION;
}

int
clio_conf_init(struct clio_conf *conf)
{
	static const struct clio_conf defaults = CLIO_CONF_DEFAULTS;

	if (conf == NULL)
		return -EINVAL;
	*conf = defaults;
	return 0;
}
