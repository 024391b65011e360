/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * main.c - the clio command: dispatches to its subcommands; every
 * subcommand takes --help and --version (cli_help_version).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
		"usage: clio dd [OPERAND]... [OPTION]...\n"
		"       clio bench NAME [--quick] [--json] [--plot DIR] [--runs N]\n"
		"                  [--file PATH] [--size N] [--cachegrind] [--sim]\n"
		"       clio mount [-f] [-d] [-o OPTS] SOURCE MOUNTPOINT\n"
		"       clio umount MOUNTPOINT\n"
		"       clio stat [--json | --raw] [MOUNTPOINT...]\n"
		"       clio stat -i SECONDS [-c COUNT] [-x] [MOUNTPOINT...]\n"
		"       clio info DEVICE [--json]\n"
		"       clio serve DEVICE [-o TUNABLES] (--socket PATH | --port N) [-r] [-f]\n"
		"                  [--pidfile PATH] [--tls=on|require] [--tls-certificates DIR]\n"
		"       clio version\n"
		"       clio help\n"
		"See clio(1).\n");
}

int
cli_help_version(int argc, char **argv, void (*usage_fn)(FILE *),
		 const char *usage_text)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--version") == 0) {
			printf("clio %s\n", CLIO_VERSION);
			return 0;
		}
		if (strcmp(argv[i], "--help") == 0) {
			if (usage_fn)
				usage_fn(stdout);
			else
				fputs(usage_text, stdout);
			return 0;
		}
	}
	return -1;
}

int
cli_bad_option(const char *cmd, int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	if (strncmp(arg, "--", 2) == 0 && arg[2] != '\0')
		fprintf(stderr, c == ':' ? "%s: option '%s' requires an argument\n"
					 : "%s: unrecognized option '%s'\n", cmd, arg);
	else
		fprintf(stderr, c == ':' ? "%s: option requires an argument -- '%c'\n"
					 : "%s: invalid option -- '%c'\n", cmd, optopt);
	return EX_USAGE;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EX_USAGE;
	}
	if (strcmp(argv[1], "dd") == 0)
		return cmd_dd(argc - 1, argv + 1);
	if (strcmp(argv[1], "bench") == 0)
		return cmd_bench(argc - 1, argv + 1);
	if (strcmp(argv[1], "bench-one") == 0) /* internal: under cachegrind */
		return cmd_bench_one(argc - 1, argv + 1);
	if (strcmp(argv[1], "mount") == 0)
		return cmd_mount(argc - 1, argv + 1);
	if (strcmp(argv[1], "umount") == 0)
		return cmd_umount(argc - 1, argv + 1);
	if (strcmp(argv[1], "stat") == 0)
		return cmd_stat(argc - 1, argv + 1);
	if (strcmp(argv[1], "info") == 0)
		return cmd_info(argc - 1, argv + 1);
	if (strcmp(argv[1], "serve") == 0)
		return cmd_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0 ||
	    strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		bool version = strstr(argv[1], "version") != NULL;

		/* they take nothing more but --help and --version */
		if (argc > 2 && cli_help_version(argc - 1, argv + 1, usage, NULL) < 0) {
			fprintf(stderr, "clio %s: %s '%s'\n", argv[1],
				argv[2][0] == '-' ? "unrecognized option"
						  : "unexpected argument", argv[2]);
			return EX_USAGE;
		}
		if (argc > 2)
			return 0;
		if (version)
			printf("clio %s\n", CLIO_VERSION);
		else
			usage(stdout);
		return 0;
	}
	fprintf(stderr, "clio: unknown command '%s' (clio --help lists them)\n", argv[1]);
	return EX_USAGE;
}
