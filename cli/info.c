/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * info.c - `clio info DEVICE [--json]`: what a device is, as nbdinfo tells
 * of an NBD export: size, sector size, maxio, clock, the engine that runs
 * its requests (and why, when it is not the first choice), queue depth,
 * and the backend's parameters (a sim device's model, a file's path, a
 * fault device's rules and its inner device).  Uses only the public API
 * (clio_dev_info, clio_dev_params).  The device is opened read-only.
 *
 * Exit 0; 64 (EX_USAGE) for bad usage or a malformed device string; 66
 * (EX_NOINPUT) for a device that cannot be opened; 74 (EX_IOERR) when
 * standard output cannot be written.  Errors are one line naming the
 * value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: clio info DEVICE [--json]\n");
}

/* A JSON number as printf writes one (no inf, nan or hex). */
static int
is_json_number(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return 0;
	if (*p == '.') {
		if (!(*++p >= '0' && *p <= '9'))
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

/* The engine's name and, in parentheses after it, the reason. */
static void
split_engine(const char *engine, char *name, size_t nlen, char *why,
	     size_t wlen)
{
	const char *paren = strstr(engine, " (");
	size_t n = paren ? (size_t)(paren - engine) : strlen(engine);

	snprintf(name, nlen, "%.*s", (int)n, engine);
	why[0] = '\0';
	if (paren != NULL) {
		size_t l = strlen(paren + 2);
		if (l > 0 && paren[2 + l - 1] == ')')
			l--;
		snprintf(why, wlen, "%.*s", (int)l, paren + 2);
	}
}

static void
print_text(const char *spec, const struct clio_dev_info *in, char *params)
{
	char h[32];
	char *line, *save = NULL;

	fmt_bytes_human(h, sizeof(h), (double)in->size, 0);
	printf("device:       %s\n", spec);
	printf("type:         %s\n", in->type);
	printf("size:         %llu (%s)\n", (unsigned long long)in->size, h);
	printf("sector size:  %u\n", in->sector);
	if (in->maxio) {
		fmt_bytes_human(h, sizeof(h), (double)in->maxio, 0);
		printf("maxio:        %u (%s)\n", in->maxio, h);
	} else {
		printf("maxio:        none\n");
	}
	printf("clock:        %s\n", in->is_virtual ? "virtual" : "real");
	printf("engine:       %s\n", in->engine);
	printf("queue depth:  %u\n", in->queue_depth);
	printf("resizable:    %s\n", in->resizable ? "yes" : "no");
	printf("parameters:\n");
	for (line = strtok_r(params, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		printf("  %s\n", line);
}

static void
print_json(const char *spec, const struct clio_dev_info *in, char *params)
{
	char name[96], why[96];
	char *line, *save = NULL;
	int first = 1;

	split_engine(in->engine, name, sizeof(name), why, sizeof(why));
	printf("{\"device\": ");
	json_string(stdout, spec);
	printf(", \"type\": ");
	json_string(stdout, in->type);
	printf(", \"size\": %llu, \"sector_size\": %u, \"maxio\": %u",
	       (unsigned long long)in->size, in->sector, in->maxio);
	printf(", \"clock\": \"%s\", \"engine\": ", in->is_virtual ? "virtual" : "real");
	json_string(stdout, name);
	if (why[0]) {
		printf(", \"engine_reason\": ");
		json_string(stdout, why);
	}
	printf(", \"queue_depth\": %u, \"resizable\": %s, \"params\": {",
	       in->queue_depth, in->resizable ? "true" : "false");
	for (line = strtok_r(params, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		printf("%s", first ? "" : ", ");
		first = 0;
		json_string(stdout, line);
		printf(": ");
		if (is_json_number(eq + 1))
			printf("%s", eq + 1);
		else
			json_string(stdout, eq + 1);
	}
	printf("}}\n");
}

int
cmd_info(int argc, char **argv)
{
	const char *spec = NULL;
	struct clio_dev_info in;
	char err[1024], *params;
	clio_dev *d;
	int i, json = 0, n, r, status = 0;
	bool opts = true;	/* until "--" */

	if ((r = cli_help_version(argc, argv, usage, NULL)) >= 0)
		return r;

	for (i = 1; i < argc; i++) {
		if (opts && strcmp(argv[i], "--") == 0) {
			opts = false;
		} else if (opts && strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (opts && strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (opts && argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "clio info: unknown option '%s' "
				"(usage: clio info DEVICE [--json])\n", argv[i]);
			return EX_USAGE;
		} else if (spec != NULL) {
			fprintf(stderr, "clio info: one device only, not also "
				"'%s'\n", argv[i]);
			return EX_USAGE;
		} else {
			spec = argv[i];
		}
	}
	if (spec == NULL) {
		usage(stderr);
		return EX_USAGE;
	}
	r = clio_dev_open_err(spec, CLIO_DEV_RDONLY, &d, err, sizeof(err));
	if (r < 0) {
		char shown[512];

		fprintf(stderr, "clio info: cannot open '%s': %s\n",
			cli_printable(spec, shown, sizeof(shown)),
			err[0] ? cli_reason(err, spec) : strerror(-r));
		return r == -EINVAL ? EX_USAGE : EX_NOINPUT;
	}
	r = clio_dev_info(d, &in);
	n = r == 0 ? clio_dev_params(d, NULL, 0) : r;
	params = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (params == NULL || clio_dev_params(d, params, (size_t)n + 1) != n) {
		fprintf(stderr, "clio info: '%s': %s\n", spec,
			strerror(n < 0 ? -n : ENOMEM));
		free(params);
		clio_dev_close(d);
		return EX_SOFTWARE;
	}
	if (json)
		print_json(spec, &in, params);
	else
		print_text(spec, &in, params);
	free(params);
	clio_dev_close(d);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "clio info: standard output: %s\n", strerror(errno));
		status = EX_IOERR;
	}
	return status;
}
