/*
 * cli.h - what the clio command's source files share.
 */
#ifndef CLIO_CLI_H
#define CLIO_CLI_H

#include <stdio.h>

#include "clio.h"

#define CLIO_VERSION "0.1"

int cmd_dd(int argc, char **argv);

/* report.c: human and JSON renderings of statistics */
void fmt_bytes_human(char *out, size_t len, double bytes, int si);
void print_iostat_line(FILE *fp, const char *name, const struct clio_iostat *b,
		       const struct clio_iostat *front, double elapsed);
void json_string(FILE *fp, const char *s);

#endif
