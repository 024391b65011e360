/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dd.c - `clio dd`: GNU dd's copy loop with clio's cache (or its direct
 * path) between the program and each device.
 *
 * Order of work: every operand and option is parsed and checked before
 * anything is opened, so a bad one changes nothing (exit 64, EX_USAGE).
 * Then the input and output are opened, the copy runs, conv=fsync syncs,
 * the handles are closed (the last write-back is counted, and its error
 * reported, before the summary), and the summary goes to standard error
 * (or, with --json, one JSON object to standard output).  Elapsed time is
 * simulated time when every clio device involved runs on the virtual
 * clock, wall time otherwise.  With oflag=direct, writes the direct path
 * cannot take (from a partial block on) go through the cache, as GNU dd
 * turns O_DIRECT off for them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h"

#define ERRLEN 256

enum endpoint_kind { EP_STDIO, EP_ZERO, EP_FD, EP_CLIO };

struct endpoint {
	const char *spec;	/* NULL: standard input/output */
	enum endpoint_kind kind;
	int fd;
	clio_dev *dev;
	clio_file *file;
	clio_file *tail;	/* oflag=direct: buffered, for what it cannot take */
	bool direct;
};

struct dd {
	struct endpoint in, out;
	uint64_t ibs, obs, count, skip, seek;
	bool have_bs, have_count;
	bool notrunc, fsync_end;
	int status; /* 0 default, 1 none, 2 progress, 3 noxfer */
	double iostat;
	bool json;
	struct clio_conf conf;
	clio_cache *cache;
	bool is_virtual;
	/* progress of the copy */
	uint64_t full_in, part_in, full_out, part_out, bytes;
	double t_start;
	/* --iostat */
	double next_tick, last_tick;
	struct clio_dev_stats last_in, last_out;
};

static void
usage_dd(FILE *fp)
{
	fprintf(fp,
		"usage: clio dd [if=DEV] [of=DEV] [bs=N] [ibs=N] [obs=N] [count=N]\n"
		"               [skip=N] [seek=N] [conv=notrunc,fsync,fdatasync]\n"
		"               [iflag=direct] [oflag=direct] [status=progress|none|noxfer]\n"
		"               [--bsize=N] [--maxbsize=N] [--maxphys=N] [--read-max=N]\n"
		"               [--cache-size=N] [--cluster=on|lite|off] [--rbw=cluster|block]\n"
		"               [--queue-depth=N] [--write-behind=N] [--seqmax=N]\n"
		"               [--dirty-hi=PCT] [--dirty-lo=PCT] [--dirty-age=SECONDS]\n"
		"               [--flusher=0|1] [--flush-behind=N] [--iostat=SECONDS] [--json]\n"
		"DEV is a path, /dev/zero, or a device string: file:PATH[?direct=1],\n"
		"mem:size=N, sim:preset=NAME[,...], fault:OPTS@DEV.  See clio(1).\n");
}

static double
dd_now(const struct dd *dd)
{
	return dd->is_virtual ? clio_vclock_now() : now_monotonic();
}

/* ------------------------------------------------------------ parsing */

static int
bad(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "clio dd: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return EX_USAGE;
}

static int
parse_flags(const char *v, const char *key, bool *direct)
{
	char *copy = strdup(v), *tok, *save = NULL;
	int r = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "direct") == 0)
			*direct = true;
		else {
			r = bad("invalid %s flag '%s'", key, tok);
			break;
		}
	}
	free(copy);
	return r;
}

static int
parse_operand(struct dd *dd, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char key[16];
	const char *v;
	uint64_t n;

	if (eq == NULL || (size_t)(eq - arg) >= sizeof(key))
		return bad("unrecognized operand '%s'%s", arg, "");
	memcpy(key, arg, (size_t)(eq - arg));
	key[eq - arg] = '\0';
	v = eq + 1;
	if (strcmp(key, "if") == 0 || strcmp(key, "of") == 0) {
		if (*v == '\0')
			return bad("empty %s= operand%s", key, "");
		if (key[0] == 'i')
			dd->in.spec = v;
		else
			dd->out.spec = v;
		return 0;
	}
	if (strcmp(key, "bs") == 0 || strcmp(key, "ibs") == 0 ||
	    strcmp(key, "obs") == 0) {
		if (parse_size(v, &n) < 0 || n == 0 || n > (1ull << 31))
			return bad("invalid block size '%s' for %s=", v, key);
		if (key[0] == 'b') {
			dd->ibs = dd->obs = n;
			dd->have_bs = true;
		} else if (key[0] == 'i') {
			dd->ibs = n;
		} else {
			dd->obs = n;
		}
		return 0;
	}
	if (strcmp(key, "count") == 0 || strcmp(key, "skip") == 0 ||
	    strcmp(key, "seek") == 0) {
		if (parse_size(v, &n) < 0)
			return bad("invalid number '%s' for %s=", v, key);
		if (key[0] == 'c') {
			dd->count = n;
			dd->have_count = true;
		} else if (key[1] == 'k') {
			dd->skip = n;
		} else {
			dd->seek = n;
		}
		return 0;
	}
	if (strcmp(key, "conv") == 0) {
		char *copy = strdup(v), *tok, *save = NULL;
		int r = 0;
		for (tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (strcmp(tok, "notrunc") == 0)
				dd->notrunc = true;
			else if (strcmp(tok, "fsync") == 0 ||
				 strcmp(tok, "fdatasync") == 0)
				dd->fsync_end = true;
			else {
				r = bad("invalid conversion '%s'%s", tok, "");
				break;
			}
		}
		free(copy);
		return r;
	}
	if (strcmp(key, "iflag") == 0)
		return parse_flags(v, "iflag", &dd->in.direct);
	if (strcmp(key, "oflag") == 0)
		return parse_flags(v, "oflag", &dd->out.direct);
	if (strcmp(key, "status") == 0) {
		if (strcmp(v, "none") == 0)
			dd->status = 1;
		else if (strcmp(v, "progress") == 0)
			dd->status = 2;
		else if (strcmp(v, "noxfer") == 0)
			dd->status = 3;
		else
			return bad("invalid status level '%s'%s", v, "");
		return 0;
	}
	return bad("unrecognized operand '%s'%s", arg, "");
}

/* --key=value or --key value; returns args consumed or -EX_USAGE. */
static int
parse_option(struct dd *dd, int argc, char **argv, int i)
{
	const char *arg = argv[i] + 2, *eq = strchr(arg, '=');
	char key[64], err[ERRLEN];
	const char *v;
	int used = 1;

	if (strcmp(arg, "json") == 0) {
		dd->json = true;
		return 1;
	}
	if (strcmp(arg, "help") == 0) {
		usage_dd(stdout);
		exit(0);
	}
	if (eq != NULL) {
		snprintf(key, sizeof(key), "%.*s", (int)(eq - arg), arg);
		v = eq + 1;
	} else {
		if (i + 1 >= argc) {
			bad("option '--%s' needs a value%s", arg, "");
			return -EX_USAGE;
		}
		snprintf(key, sizeof(key), "%s", arg);
		v = argv[i + 1];
		used = 2;
	}
	if (strcmp(key, "iostat") == 0) {
		if (parse_double(v, &dd->iostat) < 0 || dd->iostat <= 0) {
			bad("invalid --iostat interval '%s'%s", v, "");
			return -EX_USAGE;
		}
		return used;
	}
	if (clio_conf_set(&dd->conf, key, v, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio dd: %s\n", err);
		return -EX_USAGE;
	}
	return used;
}

/* ------------------------------------------------------------ endpoints */

static bool
is_plain_fd_path(const char *spec)
{
	struct stat st;

	if (spec[0] != '/' && spec[0] != '.')
		return false;
	if (stat(spec, &st) < 0)
		return false;
	return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

/* Check a device string without opening anything a user can see. */
static int
check_spec(const struct endpoint *ep, const char *op)
{
	(void)op;
	if (ep->spec == NULL || is_plain_fd_path(ep->spec))
		return 0;
	if (strncmp(ep->spec, "sim:", 4) == 0 || strncmp(ep->spec, "mem:", 4) == 0 ||
	    strncmp(ep->spec, "fault:", 6) == 0) {
		/* in-memory devices: opening one is harmless, and checks it */
		char err[ERRLEN];
		clio_dev *d;
		int r = clio_dev_open_err(ep->spec, 0, &d, err, sizeof(err));
		if (r == -EINVAL) {
			fprintf(stderr, "clio dd: %s\n", err);
			return EX_USAGE;
		}
		if (r == 0)
			clio_dev_close(d);
	}
	return 0;
}

static int
open_endpoint(struct dd *dd, struct endpoint *ep, bool output)
{
	char err[ERRLEN];
	int flags, r;

	if (ep->spec == NULL) {
		ep->kind = EP_STDIO;
		ep->fd = output ? 1 : 0;
		return 0;
	}
	if (!output && strcmp(ep->spec, "/dev/zero") == 0) {
		ep->kind = EP_ZERO;
		return 0;
	}
	if (is_plain_fd_path(ep->spec)) {
		ep->kind = EP_FD;
		ep->fd = open(ep->spec, output ? O_WRONLY : O_RDONLY);
		if (ep->fd < 0) {
			fprintf(stderr, "clio dd: failed to open '%s': %s\n",
				ep->spec, strerror(errno));
			return output ? EX_CANTCREAT : EX_NOINPUT;
		}
		return 0;
	}
	ep->kind = EP_CLIO;
	flags = output ? CLIO_DEV_CREATE : CLIO_DEV_RDONLY;
	r = clio_dev_open_err(ep->spec, flags, &ep->dev, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "clio dd: failed to open '%s': %s\n", ep->spec,
			err[0] ? err : strerror(-r));
		return r == -EINVAL ? EX_USAGE
				    : (output ? EX_CANTCREAT : EX_NOINPUT);
	}
	r = clio_open(dd->cache, ep->dev,
		      (output ? CLIO_RDWR : CLIO_RDONLY) |
			      (ep->direct ? CLIO_DIRECT : 0),
		      &ep->file);
	if (r < 0) {
		fprintf(stderr, "clio dd: failed to open '%s': %s\n", ep->spec,
			strerror(-r));
		return output ? EX_CANTCREAT : EX_NOINPUT;
	}
	return 0;
}

static ssize_t
read_in(struct dd *dd, char *buf, size_t len, uint64_t off)
{
	struct endpoint *ep = &dd->in;
	size_t done = 0;

	switch (ep->kind) {
	case EP_ZERO:
		memset(buf, 0, len);
		return (ssize_t)len;
	case EP_CLIO:
		return clio_pread(ep->file, buf, len, off);
	default:
		/* like dd without iflag=fullblock: one read(2) */
		for (;;) {
			ssize_t r = read(ep->fd, buf + done, len - done);
			if (r < 0 && errno == EINTR)
				continue;
			return r < 0 ? -errno : r;
		}
	}
}

static ssize_t
write_out(struct dd *dd, const char *buf, size_t len, uint64_t off)
{
	struct endpoint *ep = &dd->out;
	size_t done = 0;

	if (ep->kind == EP_CLIO) {
		/* like GNU dd, which turns O_DIRECT off for good at a partial
		 * block: from the first unaligned write on, use the cache */
		if (ep->direct && ep->tail == NULL &&
		    (off | len) % clio_dev_sector_size(ep->dev) != 0) {
			int r = clio_open(dd->cache, ep->dev, CLIO_RDWR, &ep->tail);
			if (r < 0)
				return r;
		}
		return clio_pwrite(ep->tail ? ep->tail : ep->file, buf, len, off);
	}
	while (done < len) {
		ssize_t r = write(ep->fd, buf + done, len - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* ------------------------------------------------------------ reports */

static void
stats_of(struct endpoint *ep, struct clio_dev_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (ep->kind == EP_CLIO)
		clio_dev_stats(ep->dev, st);
}

static void
iostat_header(struct dd *dd)
{
	struct endpoint *eps[2] = { &dd->in, &dd->out };
	int i;

	fprintf(stderr, "%10s", "time");
	for (i = 0; i < 2; i++)
		if (eps[i]->kind == EP_CLIO)
			fprintf(stderr, " %22.22s", clio_dev_name(eps[i]->dev));
	fprintf(stderr, "\n%10s", "s");
	for (i = 0; i < 2; i++)
		if (eps[i]->kind == EP_CLIO)
			fprintf(stderr, " %7s %6s %7s", "KB/t", "tps", "MB/s");
	fputc('\n', stderr);
}

static void
iostat_tick(struct dd *dd, bool force)
{
	double now = dd_now(dd), dt;
	struct endpoint *eps[2] = { &dd->in, &dd->out };
	struct clio_dev_stats *last[2] = { &dd->last_in, &dd->last_out };
	int i;

	if (dd->iostat <= 0 || (!force && now < dd->next_tick))
		return;
	dt = now - dd->last_tick;
	if (dt <= 0)
		return;
	fprintf(stderr, "%10.2f", now - dd->t_start);
	for (i = 0; i < 2; i++) {
		struct clio_dev_stats st;
		uint64_t x, b;
		if (eps[i]->kind != EP_CLIO)
			continue;
		stats_of(eps[i], &st);
		x = st.back.reads + st.back.writes - last[i]->back.reads -
		    last[i]->back.writes;
		b = st.back.read_bytes + st.back.write_bytes -
		    last[i]->back.read_bytes - last[i]->back.write_bytes;
		fprintf(stderr, " %7.2f %6.0f %7.2f",
			x ? (double)b / 1024.0 / (double)x : 0.0,
			(double)x / dt, (double)b / 1048576.0 / dt);
		*last[i] = st;
	}
	fputc('\n', stderr);
	dd->last_tick = now;
	while (dd->next_tick <= now)
		dd->next_tick += dd->iostat;
}

static void
progress(struct dd *dd, double *next_real)
{
	double now = now_monotonic(), el;
	char si[32], bin[32];

	if (dd->status != 2 || now < *next_real)
		return;
	*next_real = now + 1.0;
	el = dd_now(dd) - dd->t_start;
	fmt_bytes_human(si, sizeof(si), (double)dd->bytes, 1);
	fmt_bytes_human(bin, sizeof(bin), (double)dd->bytes, 0);
	fprintf(stderr, "\r%llu bytes (%s, %s) copied, %.0f s, %.1f MB/s   ",
		(unsigned long long)dd->bytes, si, bin, el,
		el > 0 ? (double)dd->bytes / 1e6 / el : 0.0);
}

static void
json_dev(FILE *fp, struct endpoint *ep, const char *role, double elapsed)
{
	struct clio_dev_stats st;
	const struct clio_iostat *b = &st.back;
	uint64_t x, bytes;
	int k;

	stats_of(ep, &st);
	x = b->reads + b->writes;
	bytes = b->read_bytes + b->write_bytes;
	fprintf(fp, "{\"name\": ");
	json_string(fp, clio_dev_name(ep->dev));
	fprintf(fp,
		", \"role\": \"%s\", \"reads\": %llu, \"writes\": %llu, "
		"\"read_bytes\": %llu, \"write_bytes\": %llu, \"flushes\": %llu, "
		"\"errors\": %llu, \"busy_s\": %.6f, \"kb_per_transfer\": %.3f, "
		"\"tps\": %.3f, \"mb_per_s\": %.4f, \"lat_p50_s\": %.6g, "
		"\"lat_p99_s\": %.6g, \"front_reads\": %llu, \"front_writes\": %llu, "
		"\"front_read_bytes\": %llu, \"front_write_bytes\": %llu, "
		"\"size_hist\": [",
		role, (unsigned long long)b->reads, (unsigned long long)b->writes,
		(unsigned long long)b->read_bytes,
		(unsigned long long)b->write_bytes,
		(unsigned long long)b->flushes, (unsigned long long)b->errors,
		b->busy_s, x ? (double)bytes / 1024.0 / (double)x : 0.0,
		elapsed > 0 ? (double)x / elapsed : 0.0,
		elapsed > 0 ? (double)bytes / 1e6 / elapsed : 0.0,
		b->lat_p50_s, b->lat_p99_s,
		(unsigned long long)st.front.reads,
		(unsigned long long)st.front.writes,
		(unsigned long long)st.front.read_bytes,
		(unsigned long long)st.front.write_bytes);
	for (k = 0; k < CLIO_HIST_BUCKETS; k++)
		fprintf(fp, "%s%llu", k ? ", " : "",
			(unsigned long long)b->size_hist[k]);
	fprintf(fp, "]}");
}

static void
report(struct dd *dd, double elapsed)
{
	struct clio_cache_stats cs;
	struct endpoint *eps[2] = { &dd->in, &dd->out };
	const char *roles[2] = { "input", "output" };
	int i, n = 0;

	clio_cache_stats(dd->cache, &cs);
	if (dd->json) {
		printf("{\"elapsed_s\": %.6f, \"clock\": \"%s\", \"bytes_copied\": %llu, "
		       "\"records_in\": \"%llu+%llu\", \"records_out\": \"%llu+%llu\", "
		       "\"devices\": [",
		       elapsed, dd->is_virtual ? "virtual" : "real",
		       (unsigned long long)dd->bytes,
		       (unsigned long long)dd->full_in, (unsigned long long)dd->part_in,
		       (unsigned long long)dd->full_out, (unsigned long long)dd->part_out);
		for (i = 0; i < 2; i++) {
			if (eps[i]->kind != EP_CLIO)
				continue;
			if (n++)
				printf(", ");
			json_dev(stdout, eps[i], roles[i], elapsed);
		}
		printf("], \"cache\": {\"hits\": %llu, \"misses\": %llu, "
		       "\"readahead_blocks\": %llu, \"readahead_used\": %llu, "
		       "\"read_clusters\": %llu, \"write_clusters\": %llu, "
		       "\"rbw_reads\": %llu, \"evictions\": %llu, \"throttles\": %llu, "
		       "\"flushes_behind\": %llu, "
		       "\"write_errors\": %llu, \"lost_bytes\": %llu}, "
		       "\"conf\": {\"bsize\": %u, \"maxbsize\": %u, \"maxphys\": %u, "
		       "\"read_max\": %u, \"cache_size\": %llu, \"cluster\": \"%s\", "
		       "\"rbw\": \"%s\"}}\n",
		       (unsigned long long)cs.hits, (unsigned long long)cs.misses,
		       (unsigned long long)cs.readahead_blocks,
		       (unsigned long long)cs.readahead_used,
		       (unsigned long long)cs.read_clusters,
		       (unsigned long long)cs.write_clusters,
		       (unsigned long long)cs.rbw_reads,
		       (unsigned long long)cs.evictions,
		       (unsigned long long)cs.throttles,
		       (unsigned long long)cs.flushes_behind,
		       (unsigned long long)cs.write_errors,
		       (unsigned long long)cs.lost_bytes, dd->conf.bsize,
		       dd->conf.maxbsize, dd->conf.maxphys, dd->conf.read_max,
		       (unsigned long long)dd->conf.cache_size,
		       dd->conf.cluster == CLIO_CLUSTER_ON	   ? "on"
		       : dd->conf.cluster == CLIO_CLUSTER_LITE ? "lite"
							       : "off",
		       dd->conf.rbw == CLIO_RBW_CLUSTER ? "cluster" : "block");
		return;
	}
	if (dd->status == 1)
		return;
	if (dd->status == 2)
		fputc('\n', stderr);
	fprintf(stderr, "%llu+%llu records in\n%llu+%llu records out\n",
		(unsigned long long)dd->full_in, (unsigned long long)dd->part_in,
		(unsigned long long)dd->full_out, (unsigned long long)dd->part_out);
	if (dd->status != 3) {
		char si[32], bin[32];
		fmt_bytes_human(si, sizeof(si), (double)dd->bytes, 1);
		fmt_bytes_human(bin, sizeof(bin), (double)dd->bytes, 0);
		fprintf(stderr, "%llu bytes (%s, %s) copied, %.6g s%s, %.4g MB/s\n",
			(unsigned long long)dd->bytes, si, bin, elapsed,
			dd->is_virtual ? " simulated" : "",
			elapsed > 0 ? (double)dd->bytes / 1e6 / elapsed : 0.0);
	}
	for (i = 0; i < 2; i++) {
		struct clio_dev_stats st;
		if (eps[i]->kind != EP_CLIO)
			continue;
		stats_of(eps[i], &st);
		print_iostat_line(stderr, clio_dev_name(eps[i]->dev), &st.back,
				  &st.front, elapsed);
	}
	fprintf(stderr,
		"cache: %llu hits, %llu misses, %llu blocks read ahead (%llu used), "
		"%llu read clusters, %llu write clusters, %llu read-before-write\n",
		(unsigned long long)cs.hits, (unsigned long long)cs.misses,
		(unsigned long long)cs.readahead_blocks,
		(unsigned long long)cs.readahead_used,
		(unsigned long long)cs.read_clusters,
		(unsigned long long)cs.write_clusters,
		(unsigned long long)cs.rbw_reads);
}

/* ------------------------------------------------------------ the copy */

static int
copy(struct dd *dd)
{
	char *ibuf = NULL, *obuf = NULL;
	size_t opos = 0;
	uint64_t inoff = dd->skip * dd->ibs, outoff = dd->seek * dd->obs;
	uint64_t records = 0;
	double next_real = now_monotonic() + 1.0;
	int rc = 0;

	if (posix_memalign((void **)&ibuf, 4096, dd->ibs) != 0 ||
	    (dd->ibs != dd->obs &&
	     posix_memalign((void **)&obuf, 4096, dd->obs) != 0)) {
		fprintf(stderr, "clio dd: memory exhausted\n");
		free(ibuf);
		return EX_OSERR;
	}
	/* skip on a pipe: read and discard */
	if (dd->in.kind == EP_STDIO || dd->in.kind == EP_FD) {
		uint64_t k;
		for (k = 0; k < dd->skip; k++)
			if (read_in(dd, ibuf, dd->ibs, 0) <= 0)
				break;
	}
	while (!dd->have_count || records < dd->count) {
		ssize_t n = read_in(dd, ibuf, dd->ibs, inoff);

		if (n < 0) {
			fprintf(stderr, "clio dd: error reading '%s': %s\n",
				dd->in.spec ? dd->in.spec : "standard input",
				strerror((int)-n));
			rc = EX_IOERR;
			break;
		}
		if (n == 0)
			break;
		records++;
		inoff += (uint64_t)n;
		if ((size_t)n == dd->ibs)
			dd->full_in++;
		else
			dd->part_in++;
		if (obuf == NULL) {
			/* bs=: each input block is written as it came */
			ssize_t w = write_out(dd, ibuf, (size_t)n, outoff);
			if (w != n) {
				fprintf(stderr, "clio dd: error writing '%s': %s\n",
					dd->out.spec ? dd->out.spec : "standard output",
					strerror(w < 0 ? (int)-w : ENOSPC));
				rc = EX_IOERR;
				break;
			}
			outoff += (uint64_t)w;
			dd->bytes += (uint64_t)w;
			if ((size_t)w == dd->obs)
				dd->full_out++;
			else
				dd->part_out++;
		} else {
			size_t taken = 0;
			while (taken < (size_t)n) {
				size_t k = MIN(dd->obs - opos, (size_t)n - taken);
				memcpy(obuf + opos, ibuf + taken, k);
				opos += k;
				taken += k;
				if (opos == dd->obs) {
					ssize_t w = write_out(dd, obuf, opos, outoff);
					if (w != (ssize_t)opos) {
						fprintf(stderr,
							"clio dd: error writing '%s': %s\n",
							dd->out.spec ? dd->out.spec
								     : "standard output",
							strerror(w < 0 ? (int)-w : ENOSPC));
						rc = EX_IOERR;
						goto out;
					}
					outoff += opos;
					dd->bytes += opos;
					dd->full_out++;
					opos = 0;
				}
			}
		}
		iostat_tick(dd, false);
		progress(dd, &next_real);
	}
	if (rc == 0 && obuf != NULL && opos > 0) {
		ssize_t w = write_out(dd, obuf, opos, outoff);
		if (w != (ssize_t)opos) {
			fprintf(stderr, "clio dd: error writing '%s': %s\n",
				dd->out.spec ? dd->out.spec : "standard output",
				strerror(w < 0 ? (int)-w : ENOSPC));
			rc = EX_IOERR;
		} else {
			dd->bytes += opos;
			dd->part_out++;
		}
	}
out:
	free(ibuf);
	free(obuf);
	return rc;
}

/* Close the clio handles (the devices stay open for the statistics);
 * returns EX_IOERR if the output's write-back failed. */
static int
close_files(struct dd *dd)
{
	struct endpoint *out = &dd->out;
	int r, rc = 0;

	if (dd->in.file != NULL) {
		(void)clio_close(dd->in.file);
		dd->in.file = NULL;
	}
	/* the tail handle first: the last handle writes back */
	clio_file **fs[2] = { &out->tail, &out->file };
	for (int i = 0; i < 2; i++) {
		if (*fs[i] == NULL)
			continue;
		r = clio_close(*fs[i]);
		*fs[i] = NULL;
		if (r < 0 && rc == 0) {
			fprintf(stderr, "clio dd: error closing '%s': %s\n",
				out->spec, strerror(-r));
			rc = EX_IOERR;
		}
	}
	return rc;
}

int
cmd_dd(int argc, char **argv)
{
	struct dd dd;
	struct clio_conf defaults = CLIO_CONF_DEFAULTS;
	char err[ERRLEN];
	int i, r, rc = 0;
	double elapsed;

	memset(&dd, 0, sizeof(dd));
	dd.conf = defaults;
	dd.ibs = dd.obs = 512;
	for (i = 1; i < argc;) {
		if (strncmp(argv[i], "--", 2) == 0) {
			r = parse_option(&dd, argc, argv, i);
			if (r < 0)
				return -r;
			i += r;
			continue;
		}
		r = parse_operand(&dd, argv[i]);
		if (r != 0)
			return r;
		i++;
	}
	if (clio_conf_check(&dd.conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio dd: %s\n", err);
		return EX_USAGE;
	}
	if (dd.json && dd.out.spec == NULL) {
		fprintf(stderr, "clio dd: --json needs of= (standard output "
				"carries the JSON)\n");
		return EX_USAGE;
	}
	if ((r = check_spec(&dd.in, "if")) != 0 || (r = check_spec(&dd.out, "of")) != 0)
		return r;

	clio_dev_set_default_queue_depth(dd.conf.queue_depth);
	r = clio_cache_new(&dd.conf, &dd.cache);
	if (r < 0) {
		fprintf(stderr, "clio dd: cannot create the cache: %s\n", strerror(-r));
		return EX_OSERR;
	}
	if ((rc = open_endpoint(&dd, &dd.in, false)) != 0 ||
	    (rc = open_endpoint(&dd, &dd.out, true)) != 0)
		goto done;

	dd.is_virtual = (dd.in.kind == EP_CLIO || dd.out.kind == EP_CLIO) &&
			(dd.in.kind != EP_CLIO || clio_dev_is_virtual(dd.in.dev)) &&
			(dd.out.kind != EP_CLIO || clio_dev_is_virtual(dd.out.dev)) &&
			dd.in.kind != EP_STDIO && dd.out.kind != EP_STDIO;

	/* like dd: truncate the output at seek= unless conv=notrunc */
	if (dd.out.kind == EP_CLIO && !dd.notrunc) {
		uint64_t at = dd.seek * dd.obs;
		if (clio_fsize(dd.out.file) > (int64_t)at) {
			r = clio_ftruncate(dd.out.file, at);
			if (r < 0 && r != -EINVAL) {
				fprintf(stderr, "clio dd: failed to truncate '%s': %s\n",
					dd.out.spec, strerror(-r));
				rc = EX_IOERR;
				goto done;
			}
		}
	}
	if (dd.in.kind == EP_CLIO)
		clio_dev_stats_reset(dd.in.dev);
	if (dd.out.kind == EP_CLIO)
		clio_dev_stats_reset(dd.out.dev);

	dd.t_start = dd_now(&dd);
	dd.last_tick = dd.t_start;
	dd.next_tick = dd.t_start + dd.iostat;
	if (dd.iostat > 0)
		iostat_header(&dd);
	rc = copy(&dd);
	if (dd.out.kind == EP_CLIO && dd.fsync_end) {
		r = clio_fsync(dd.out.file);
		if (r < 0) {
			fprintf(stderr, "clio dd: fsync failed on '%s': %s\n",
				dd.out.spec, strerror(-r));
			if (rc == 0)
				rc = EX_IOERR;
		}
	} else if (dd.out.kind == EP_FD && dd.fsync_end) {
		fsync(dd.out.fd);
	}
	/* like dd, close before the summary: it then counts the write-back
	 * at close, and an error there is not printed after a success */
	r = close_files(&dd);
	if (rc == 0)
		rc = r;
	iostat_tick(&dd, true);
	elapsed = dd_now(&dd) - dd.t_start;
	report(&dd, elapsed);

done:
	r = close_files(&dd);
	if (rc == 0)
		rc = r;
	if (dd.in.dev)
		clio_dev_close(dd.in.dev);
	if (dd.out.dev)
		clio_dev_close(dd.out.dev);
	if (dd.in.kind == EP_FD)
		close(dd.in.fd);
	if (dd.out.kind == EP_FD)
		close(dd.out.fd);
	clio_cache_free(dd.cache);
	return rc;
}
