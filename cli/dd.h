/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dd.h - what the files of `clio dd` share: the parsed operands, the two
 * endpoints and the counters of the copy.
 *
 * Invariants:
 *  1. Once parsing has returned 0, every operand is valid and consistent
 *     (no two conversions that exclude each other, no flag where GNU dd
 *     refuses it); nothing has been opened.
 *  2. skip and seek are absolute byte offsets (DD_OFF_OVERFLOW: past
 *     2^63-1, which GNU dd refuses at the seek), and count is max_records
 *     whole ibs blocks plus max_bytes bytes, as GNU dd splits them.
 *  3. bytes counts what reached the output (or the cache above it); the
 *     summary is printed from these counters only.
 *  4. in.off and out.off are the endpoints' current byte offsets: the
 *     clio devices are read and written at them, fd endpoints keep their
 *     own file offset.
 */
#ifndef CLIO_DD_H
#define CLIO_DD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli.h"

/* conv= */
#define CONV_ASCII	0x0001
#define CONV_EBCDIC	0x0002
#define CONV_IBM	0x0004
#define CONV_BLOCK	0x0008
#define CONV_UNBLOCK	0x0010
#define CONV_LCASE	0x0020
#define CONV_UCASE	0x0040
#define CONV_SPARSE	0x0080
#define CONV_SWAB	0x0100
#define CONV_SYNC	0x0200
#define CONV_EXCL	0x0400
#define CONV_NOCREAT	0x0800
#define CONV_NOTRUNC	0x1000
#define CONV_NOERROR	0x2000
#define CONV_FDATASYNC	0x4000
#define CONV_FSYNC	0x8000
#define CONV_TWOBUFS	0x10000 /* output is gathered into obs blocks */

/* iflag= and oflag= */
#define FLAG_APPEND	0x0001
#define FLAG_DIRECT	0x0002
#define FLAG_DIRECTORY	0x0004
#define FLAG_DSYNC	0x0008
#define FLAG_SYNC	0x0010
#define FLAG_FULLBLOCK	0x0020
#define FLAG_NONBLOCK	0x0040
#define FLAG_NOATIME	0x0080
#define FLAG_NOCACHE	0x0100
#define FLAG_NOCTTY	0x0200
#define FLAG_NOFOLLOW	0x0400
#define FLAG_COUNT_BYTES 0x0800
#define FLAG_SKIP_BYTES	0x1000
#define FLAG_SEEK_BYTES	0x2000

#define DD_OFF_OVERFLOW UINT64_MAX

enum dd_status { ST_DEFAULT, ST_NONE, ST_NOXFER, ST_PROGRESS };
enum endpoint_kind { EP_FD, EP_ZERO, EP_CLIO };

struct endpoint {
	const char *spec;	/* NULL: standard input/output */
	const char *name;	/* for messages: spec or "standard input" */
	enum endpoint_kind kind;
	unsigned flags;		/* FLAG_* */
	int fd;
	bool seekable;		/* fd: lseek works */
	bool regular;		/* fd: a regular file */
	bool never_blocks;	/* fd: a file, block device or /dev/null-like */
	bool blockdev;		/* clio: a path naming a block device */
	clio_dev *dev;
	clio_file *file;
	clio_file *tail;	/* oflag=direct: buffered, for the partial end */
	uint64_t off;
};

struct dd {
	struct endpoint in, out;
	uint64_t ibs, obs, cbs;
	uint64_t skip, seek;		/* in bytes (invariant 2) */
	uint64_t seek_arg;		/* seek= as given, for messages */
	uint64_t max_records, max_bytes;
	bool have_count;
	unsigned conv;			/* CONV_* */
	enum dd_status status;
	double iostat;
	bool json;
	struct clio_conf conf;
	clio_cache *cache;
	bool is_virtual;
	bool same_file;		/* if= and of= share one clio device */
	bool quit;		/* an error GNU dd ends with its quit() */
	/* the copy's counters (invariant 3) */
	uint64_t full_in, part_in, full_out, part_out, truncated, bytes;
	double t_start;
	int progress_len;		/* length of the last progress line */
	double next_progress;		/* real time */
	/* --iostat */
	double next_tick, last_tick;
	int iostat_namew;	/* the width of a device's column group */
	struct clio_dev_stats last_in, last_out;
};

/* ddargs.c */
int dd_parse(struct dd *dd, int argc, char **argv);
void dd_usage(FILE *fp);
/* GNU's quotef, quoteaf (always quoted) and quote (an operand); each
 * result lasts for the next three calls */
const char *dd_quotef(const char *name);
const char *dd_quoteaf(const char *name);
const char *dd_quote(const char *str);

/* ddconv.c: the conversions of conv= between reading and writing.
 * dd_conv_setup builds the table; dd_convert pushes n input bytes through
 * translation, swab, block or unblock into emit, dd_conv_finish the rest. */
typedef int dd_emit_fn(struct dd *dd, const char *p, size_t n);
void dd_conv_setup(const struct dd *dd);
int dd_convert(struct dd *dd, char *buf, size_t n, dd_emit_fn *emit);
int dd_conv_finish(struct dd *dd, dd_emit_fn *emit);

/* ddsummary.c */
double dd_now(const struct dd *dd);
void dd_human(char *out, size_t len, uint64_t n, bool si);
void dd_print_stats(struct dd *dd);		/* GNU's lines: records, bytes */
void dd_progress(struct dd *dd);		/* status=progress, once a second */
void dd_report(struct dd *dd, double elapsed);	/* the final summary */
void dd_iostat_header(struct dd *dd);
void dd_iostat_tick(struct dd *dd, bool force);

/* ddsignal.c: INT, TERM, HUP, PIPE end the copy; USR1 prints the stats. */
int dd_signals_block(void);
int dd_signal_poll(struct dd *dd);	/* the ending signal seen, or 0 */
int dd_signal_check(struct dd *dd);	/* the same, no system call */
int dd_wait_fd(struct dd *dd, int fd, bool for_write);
int dd_signal_pending(void);		/* the ending signal seen, or 0 */
void dd_signal_die(int sig);

#endif
