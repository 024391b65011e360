/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nfssim.c - a simulated NFSv3 server and network on the virtual clock:
 * the second transport of the nfs engine (lib/dev/nfs.h), the device
 * `nfs+sim:preset=NAME[,KEY=V ...]`.  lib/dev/nfs.c runs over it exactly
 * as over libnfs; only the transport differs.
 *
 * One file on one server.  A call leaving the client at c->t (nfs.h
 * rule 6) is timed through four resources, each serving in arrival order
 * (start = max(arrival, free), as lib/dev/sim.c's drive):
 *
 *   uplink     the request's bytes (NFS_HDR, plus a WRITE's data) at bw
 *   +rtt/2     propagation, the router, both stacks
 *   server CPU cpu per RPC, plus the data moved at `copy`
 *   disk       READ of pages not in the server's memory; COMMIT writes
 *              every dirty page (contiguous runs as one write), then the
 *              disk's flush; a sim preset (lib/dev/sim.c), data and all
 *   downlink   the reply's bytes (NFS_HDR, plus a READ's data) at bw
 *   +rtt/2     back at the client: rep->t_done
 *
 * The server's memory: WRITEs (always answered UNSTABLE) land in it as
 * dirty 4 KiB pages, up to `mem` bytes (past it the oldest dirty data goes
 * to the disk inside the WRITE); COMMIT makes them clean by writing them
 * to the disk; READs fill it from the disk.  Clean pages are evicted by a
 * clock hand when `mem` is full.  The data is real: what was written reads
 * back byte for byte, from memory or from the disk device.
 *
 * Invariants:
 *  1. up_free, cpu_free and down_free never decrease.
 *  2. page[i] != NULL iff page i is in the server's memory; dirty[i] only
 *     then; resident counts them, ndirty the dirty ones.
 *  3. ondisk[i]: the disk holds page i's data; a page neither in memory
 *     nor on the disk reads as zeros (a hole, or past a truncation).
 *  4. Replies wait in `pend`, sorted by t_done, and are delivered only
 *     from wait() (nfs.h rule 2); only the engine's I/O thread calls in
 *     (rule 1), so no lock guards the server; the RPC counters params()
 *     reads are atomics.
 *  5. mtime and ctime are the server's virtual time in ns at the change,
 *     strictly increasing: every change gives a new version.
 *  6. The disk's clock starts at the server's start (epoch): a drive's
 *     rotation is a function of time, and so a run gives the same times
 *     whenever on the virtual clock it begins.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "dev/nfs.h"

#define PAGE 4096u
#define NFS_HDR 160		/* bytes of an RPC's header and attributes */
#define MAX_PEND 1024
#define NPROC (NFS_GETATTR + 1)

/* In the units the user writes: ms, MB/s (10^6 B/s), bytes. */
struct ns_params {
	double rtt, bw, cpu, copy;
	char disk[16];
	uint64_t mem, iosize, size, max, qd;
};

/*
 * seed2010 - seed 004 (Rick Macklem, freebsd-arch, April 2010): two
 * machines "running off the same small $50 home router", 100 Mbit
 * Ethernet, the server "an 800MHz PIII" (the laptop-as-client runs; the
 * other runs had the 1.5 GHz laptop as the server).  test5 wrote 10 x
 * 1 MiB in 1.39-1.64 s with delegations (6.36-7.53 MB/s) and in
 * 1.75-7.27 s without (1.44-5.96 MB/s).
 *   - bw 11.77 MB/s each way: 100 Mbit/s is 12.5 MB/s of frames; a full
 *     1500-byte frame costs 1538 bytes of wire time (preamble, header,
 *     FCS, gap) and carries 1448 bytes of TCP payload (IP, TCP with
 *     timestamps): 12.5 x 1448 / 1538 = 11.77 MB/s.  A 64 KiB WRITE is
 *     5.6 ms on the wire.
 *   - copy 6.6 MB/s, cpu 0.12 ms: with delegations nothing waits for a
 *     COMMIT and the writes stream, yet at 6.36-7.53 MB/s, below the
 *     wire's 11.77: the server is the limit, one WRITE at a time through
 *     its CPU (the copies and checksums of ~45 frames per 64 KiB on a
 *     PIII and a cheap NIC without offload).  Aim at the middle of the
 *     range, 6.95 MB/s.  test5 stops its clock at the last close, and
 *     the cache pushes each pass's 1 MiB cluster at its last write, so
 *     the clock covers 9 passes of the server's work (the 10th is still
 *     in flight): a pass is 10 MiB / 6.95 MB/s / 9 = 167.6 ms, of which
 *     the first WRITE's upload (5.6 ms), half a round trip and the
 *     truncating SETATTR (0.6 ms) leave 161.3 ms for 16 WRITEs: 10.08 ms
 *     each.  Per RPC, 0.12 ms (decoding, the VFS call, the reply: some
 *     100k instructions at 800 MHz; the seed gives no figure, and test5
 *     sends only 3-4 small RPCs per MiB); the rest is per byte:
 *     65536 / (10.08 - 0.12 ms) = 6.58 MB/s, 6.6.
 *   - rtt 0.3 ms: a small RPC's round trip through a home router's switch
 *     and two 2010 stacks (the seed gives none; research/network.md
 *     measures 27 us on loopback here, a LAN adds the router's store and
 *     forward and the interrupts); test5 has few round trips per MiB, so
 *     its result moves little with it.
 *   - disk ad2009: the SATA disk of seed 001 (2009, 7200 rpm, 57 MB/s),
 *     the disk such a machine had.  Without delegations each close waits
 *     for the pass's WRITEs and then a COMMIT, which writes the 1 MiB to
 *     it (one write: ~18 ms of media plus the rotation and a seek), and
 *     the opens and closes add their GETATTRs: 5.46 MB/s, inside the
 *     seed's 1.44-5.96 (its spread, the seed says, is "when the writes
 *     get flushed").
 *   - iosize 64 KiB: MAXBSIZE, the seed's subject, the largest NFS I/O a
 *     2010 FreeBSD client or server did (rsize/wsize).
 *   - mem 256 MiB of the server's memory for file data (a PIII of 2010
 *     with 512 MiB); test5's 1 MiB file always fits.
 */
static const struct {
	const char *name;
	struct ns_params p;
} presets[] = {
	{ "seed2010", { .rtt = 0.3, .bw = 11.77, .cpu = 0.12, .copy = 6.6,
			.disk = "ad2009", .mem = 256ull << 20, .iosize = 65536,
			.size = 0, .max = 256ull << 20, .qd = 0 } },
	/* a current LAN: 10 Gbit, an NVMe server */
	{ "lan", { .rtt = 0.05, .bw = 1180, .cpu = 0.01, .copy = 5000,
		   .disk = "ssd", .mem = 1ull << 30, .iosize = 1 << 20,
		   .size = 0, .max = 1ull << 30, .qd = 0 } },
};

struct pend {
	void *tag;
	struct nfs_reply rep;
	char *data;
};

struct ns {
	struct nfs_xport x;
	struct ns_params p;
	char preset[16];
	double rtt_s, bw_bps, cpu_s, copy_bps;
	clio_dev *disk;

	double up_free, cpu_free, down_free; /* invariant 1 */
	double epoch;		/* the disk's time 0: this server's start */
	uint64_t fsize;
	int64_t mtime_ns;
	char verf[NFS_VERF_SIZE];

	size_t npages, hand;
	unsigned char **page;	/* invariant 2 */
	bool *dirty, *ondisk;	/* invariants 2, 3 */
	uint64_t resident, ndirty;

	struct pend pend[MAX_PEND]; /* invariant 4 */
	int npend;

	atomic_ullong n_rpc[NPROC];
	atomic_ullong n_disk_reads, n_disk_writes;
};

static const char *const proc_names[NPROC] = { "read", "write", "commit",
						"setattr", "getattr" };

/* ------------------------------------------------------------ the disk */

/* One disk command at t: its completion, or -1 on error. */
static double
disk_io(struct ns *s, enum clio_op op, uint64_t off, void *buf, size_t len,
	double t)
{
	struct iovec iov = { buf, len };
	struct dev_io p = { .op = op, .off = off, .iov = &iov, .iovcnt = 1,
			    .len = len, .t_submit = t - s->epoch };
	ssize_t r = s->disk->ops->io(s->disk, &p);

	if (r < 0)
		return -1;
	if (op == CLIO_OP_READ)
		atomic_fetch_add(&s->n_disk_reads, 1);
	else if (op == CLIO_OP_WRITE)
		atomic_fetch_add(&s->n_disk_writes, 1);
	return p.t_done + s->epoch;
}

static void
page_drop(struct ns *s, size_t i)
{
	if (s->page[i] == NULL)
		return;
	if (s->dirty[i])
		s->ndirty--;
	s->dirty[i] = false;
	free(s->page[i]);
	s->page[i] = NULL;
	s->resident--;
}

/* Write the dirty pages of [a, b) to the disk from t, each run as one
 * command; returns when the last is done (t if none), or -1. */
static double
write_dirty(struct ns *s, size_t a, size_t b, double t)
{
	double done = t;
	size_t i = a, j, k;

	while (i < b) {
		unsigned char *buf;
		double e;

		if (!s->dirty[i]) {
			i++;
			continue;
		}
		for (j = i; j < b && s->dirty[j]; j++)
			;
		buf = malloc((j - i) * PAGE);
		if (buf == NULL)
			return -1;
		for (k = i; k < j; k++)
			memcpy(buf + (k - i) * PAGE, s->page[k], PAGE);
		e = disk_io(s, CLIO_OP_WRITE, (uint64_t)i * PAGE, buf, (j - i) * PAGE, t);
		free(buf);
		if (e < 0)
			return -1;
		for (k = i; k < j; k++) {
			s->dirty[k] = false;
			s->ondisk[k] = true;
		}
		s->ndirty -= j - i;
		done = MAX(done, e);
		i = j;
	}
	return done;
}

/* Room for one more page: evict a clean one, or write everything dirty
 * first (the server's memory is full of it); returns the time that took
 * from t, or -1. */
static double
make_room(struct ns *s, size_t keep_a, size_t keep_b, double t)
{
	size_t n;

	if (s->resident * PAGE < s->p.mem)
		return t;
	if (s->ndirty == s->resident) {
		t = write_dirty(s, 0, s->npages, t);
		if (t < 0)
			return -1;
	}
	for (n = 0; n < s->npages; n++, s->hand = (s->hand + 1) % s->npages)
		if (s->page[s->hand] != NULL && !s->dirty[s->hand] &&
		    (s->hand < keep_a || s->hand >= keep_b)) {
			page_drop(s, s->hand);
			break;
		}
	return t;
}

/* Pages [a, b) into memory from t (runs on the disk read as one
 * command; with fresh, none: they are to be overwritten whole), evicting
 * none of [ka, kb); returns when they are in, or -1. */
static double
load_pages_keep(struct ns *s, size_t a, size_t b, bool fresh, size_t ka, size_t kb,
		double t)
{
	double done = t;
	size_t i = a, j, k;

	while (i < b) {
		unsigned char *buf = NULL;
		double e = t;

		if (s->page[i] != NULL) {
			i++;
			continue;
		}
		for (j = i; j < b && s->page[j] == NULL && s->ondisk[j] == s->ondisk[i]; j++)
			;
		if (s->ondisk[i] && !fresh) {
			buf = malloc((j - i) * PAGE);
			if (buf == NULL)
				return -1;
			e = disk_io(s, CLIO_OP_READ, (uint64_t)i * PAGE, buf, (j - i) * PAGE, t);
			if (e < 0) {
				free(buf);
				return -1;
			}
		}
		for (k = i; k < j; k++) {
			double r = make_room(s, MIN(a, ka), MAX(b, kb), t);

			if (r < 0 || (s->page[k] = calloc(1, PAGE)) == NULL) {
				free(buf);
				return -1;
			}
			e = MAX(e, r);
			if (buf != NULL)
				memcpy(s->page[k], buf + (k - i) * PAGE, PAGE);
			s->resident++;
		}
		free(buf);
		done = MAX(done, e);
		i = j;
	}
	return done;
}

static double
load_pages(struct ns *s, size_t a, size_t b, bool fresh, double t)
{
	return load_pages_keep(s, a, b, fresh, a, b, t);
}

/* ------------------------------------------------------------ the server */

static void
attr_now(struct ns *s, struct nfs_reply *rep)
{
	rep->has_attr = true;
	rep->attr.size = s->fsize;
	rep->attr.fileid = 2010;
	rep->attr.mtime_ns = rep->attr.ctime_ns = s->mtime_ns;
}

static void
changed(struct ns *s, double t)
{
	int64_t ns = (int64_t)llround(t * 1e9);

	s->mtime_ns = MAX(s->mtime_ns + 1, ns);
}

/* Serve c at the server from t: the reply's fields, its data (READ,
 * malloc'd), and when the server is done. */
static double
serve(struct ns *s, const struct nfs_call *c, struct nfs_reply *rep,
      char **data, double t)
{
	size_t a, b, i;
	double done = t;

	switch (c->proc) {
	case NFS_READ: {
		uint64_t n = c->off >= s->fsize ? 0 : MIN((uint64_t)c->len, s->fsize - c->off);
		char *buf = malloc(n ? n : 1);

		if (buf == NULL)
			goto nomem;
		if (n > 0) {
			a = c->off / PAGE;
			b = DIV_ROUND_UP(c->off + n, PAGE);
			if ((done = load_pages(s, a, b, false, t)) < 0) {
				free(buf);
				goto eio;
			}
			for (i = a; i < b; i++) {
				uint64_t lo = MAX((uint64_t)i * PAGE, c->off);
				uint64_t hi = MIN((uint64_t)(i + 1) * PAGE, c->off + n);

				memcpy(buf + (lo - c->off), s->page[i] + (lo - (uint64_t)i * PAGE),
				       hi - lo);
			}
		}
		*data = buf;
		rep->count = (uint32_t)n;
		rep->eof = c->off + n >= s->fsize;
		break;
	}
	case NFS_WRITE: {
		uint64_t end = c->off + c->len;

		if (end > s->p.max) {
			rep->err = -EFBIG;
			return t;
		}
		a = c->off / PAGE;
		b = DIV_ROUND_UP(end, PAGE);
		/* partial edge pages come in first (from the disk if there) */
		if (c->len > 0) {
			bool pa = c->off % PAGE != 0 || end < (uint64_t)(a + 1) * PAGE;
			bool pb = end % PAGE != 0;

			if (pa && (done = load_pages_keep(s, a, a + 1, false, a, b, done)) < 0)
				goto eio;
			if (pb) {
				double e = load_pages_keep(s, b - 1, b, false, a, b, t);

				if (e < 0)
					goto eio;
				done = MAX(done, e);
			}
			if (load_pages(s, a, b, true, t) < 0)
				goto eio;
		}
		for (i = a; i < b; i++) {
			uint64_t lo = MAX((uint64_t)i * PAGE, c->off);
			uint64_t hi = MIN((uint64_t)(i + 1) * PAGE, end);

			memcpy(s->page[i] + (lo - (uint64_t)i * PAGE), c->data + (lo - c->off),
			       hi - lo);
			if (!s->dirty[i])
				s->ndirty++;
			s->dirty[i] = true;
		}
		s->fsize = MAX(s->fsize, end);
		changed(s, done);
		rep->count = c->len;
		rep->stable = false;
		rep->has_verf = true;
		memcpy(rep->verf, s->verf, NFS_VERF_SIZE);
		break;
	}
	case NFS_COMMIT:
		if ((done = write_dirty(s, 0, s->npages, t)) < 0 ||
		    (done = disk_io(s, CLIO_OP_FLUSH, 0, NULL, 0, done)) < 0)
			goto eio;
		rep->has_verf = true;
		memcpy(rep->verf, s->verf, NFS_VERF_SIZE);
		break;
	case NFS_SETSIZE:
		if (c->size > s->p.max) {
			rep->err = -EFBIG;
			return t;
		}
		if (c->size < s->fsize) {
			a = DIV_ROUND_UP(c->size, PAGE);
			for (i = a; i < s->npages; i++) {
				page_drop(s, i);
				s->ondisk[i] = false;
			}
			if (c->size % PAGE) {
				/* the page the new end is in: zeros past it */
				i = c->size / PAGE;
				if ((done = load_pages(s, i, i + 1, false, t)) < 0)
					goto eio;
				memset(s->page[i] + c->size % PAGE, 0, PAGE - c->size % PAGE);
				if (!s->dirty[i])
					s->ndirty++;
				s->dirty[i] = true;
			}
		}
		s->fsize = c->size;
		changed(s, done);
		break;
	case NFS_GETATTR:
		break;
	}
	attr_now(s, rep);
	return done;
nomem:
	rep->err = -ENOMEM;
	return t;
eio:
	rep->err = -EIO;
	return t;
}

/* ------------------------------------------------------------ transport */

static int
ns_call(struct nfs_xport *x, const struct nfs_call *c, void *tag)
{
	struct ns *s = (struct ns *)x;
	struct pend *pe;
	size_t up = NFS_HDR + (c->proc == NFS_WRITE ? c->len : 0);
	size_t moved = c->proc == NFS_WRITE ? c->len : 0;
	double t, t_srv;
	int i;

	if (s->npend == MAX_PEND)
		return -EAGAIN;
	pe = &s->pend[s->npend];
	memset(pe, 0, sizeof(*pe));
	pe->tag = tag;
	/* uplink, propagation, the server's CPU */
	t = MAX(c->t, s->up_free);
	s->up_free = t + (double)up / s->bw_bps;
	t = s->up_free + s->rtt_s / 2;
	t = MAX(t, s->cpu_free);
	t_srv = serve(s, c, &pe->rep, &pe->data, t);
	if (c->proc == NFS_READ)
		moved = pe->rep.count;
	s->cpu_free = t + s->cpu_s + (double)moved / s->copy_bps;
	t_srv = MAX(t_srv, s->cpu_free);
	/* downlink, propagation */
	t = MAX(t_srv, s->down_free);
	s->down_free = t + (double)(NFS_HDR + (c->proc == NFS_READ ? pe->rep.count : 0)) /
				   s->bw_bps;
	pe->rep.t_done = s->down_free + s->rtt_s / 2;
	pe->rep.data = pe->data;
	atomic_fetch_add(&s->n_rpc[c->proc], 1);
	/* keep pend sorted by t_done (stable: equal times in call order) */
	for (i = s->npend; i > 0 && s->pend[i - 1].rep.t_done > pe->rep.t_done; i--)
		;
	if (i < s->npend) {
		struct pend tmp = *pe;

		memmove(&s->pend[i + 1], &s->pend[i], (size_t)(s->npend - i) * sizeof(*pe));
		s->pend[i] = tmp;
	}
	s->npend++;
	return 0;
}

/* Every reply waiting when wait() began, earliest first. */
static void
ns_wait(struct nfs_xport *x, int wake_fd)
{
	struct ns *s = (struct ns *)x;
	int n = s->npend;
	uint64_t v;

	if (n == 0) {
		struct pollfd pfd = { wake_fd, POLLIN, 0 };

		if (poll(&pfd, 1, 100) > 0)
			(void)!read(wake_fd, &v, sizeof(v));
		return;
	}
	(void)!read(wake_fd, &v, sizeof(v)); /* nonblocking */
	while (n-- > 0 && s->npend > 0) {
		struct pend pe = s->pend[0];

		memmove(&s->pend[0], &s->pend[1], (size_t)(s->npend - 1) * sizeof(pe));
		s->npend--;
		s->x.reply(s->x.arg, pe.tag, &pe.rep);
		free(pe.data);
	}
}

static void
ns_close(struct nfs_xport *x)
{
	struct ns *s = (struct ns *)x;
	size_t i;
	int k;

	for (k = 0; k < s->npend; k++)
		free(s->pend[k].data);
	if (s->page != NULL)
		for (i = 0; i < s->npages; i++)
			free(s->page[i]);
	free(s->page);
	free(s->dirty);
	free(s->ondisk);
	if (s->disk != NULL)
		s->disk->ops->close(s->disk);
	free(s);
}

static void
ns_params(struct nfs_xport *x, struct dev_params *o)
{
	struct ns *s = (struct ns *)x;
	int i;

	dev_param(o, "preset", "%s", s->preset);
	dev_param(o, "rtt", "%g", s->p.rtt);
	dev_param(o, "bw", "%g", s->p.bw);
	dev_param(o, "cpu", "%g", s->p.cpu);
	dev_param(o, "copy", "%g", s->p.copy);
	dev_param(o, "mem", "%llu", (unsigned long long)s->p.mem);
	dev_param(o, "max", "%llu", (unsigned long long)s->p.max);
	dev_param(o, "disk", "%s", s->p.disk);
	for (i = 0; i < NPROC; i++) {
		char k[16];

		snprintf(k, sizeof(k), "rpc_%s", proc_names[i]);
		dev_param(o, k, "%llu", (unsigned long long)atomic_load(&s->n_rpc[i]));
	}
	dev_param(o, "disk_reads", "%llu", (unsigned long long)atomic_load(&s->n_disk_reads));
	dev_param(o, "disk_writes", "%llu",
		  (unsigned long long)atomic_load(&s->n_disk_writes));
	dev_params_of(s->disk, "disk.", o);
}

static const struct nfs_xport_ops ns_ops = {
	.call = ns_call,
	.wait = ns_wait,
	.close = ns_close,
	.params = ns_params,
};

/* ------------------------------------------------------------ opening */

struct parse_ctx {
	struct ns_params *p;
	char *preset;
	const char *spec;
	char *err;
	size_t errlen;
	int pass;		/* 0: the preset; 1: the rest */
	char max_given[32];	/* max= as written, if given */
};

/* The model's times stay finite: a round trip or a server's time per
 * RPC of at most a minute, rates of at least 1 kB/s. */
#define SIM_MS_MAX 60000.0
#define SIM_MBS_MIN 0.001

static int
set_key(void *arg, const char *k, const char *v)
{
	struct parse_ctx *cx = arg;
	struct ns_params *p = cx->p;
	double *dv = NULL;
	uint64_t *uv = NULL;
	bool size = true;
	size_t i;

	if (strcmp(k, "preset") == 0) {
		if (cx->pass == 1)
			return 0;
		for (i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
			if (strcmp(presets[i].name, v) == 0)
				break;
		if (i == sizeof(presets) / sizeof(presets[0])) {
			set_err(cx->err, cx->errlen, "nfs+sim: unknown preset '%s' in '%s' "
				"(seed2010, lan)", v, cx->spec);
			return -EINVAL;
		}
		*p = presets[i].p;
		snprintf(cx->preset, 16, "%s", v);
		return 0;
	}
	if (cx->pass == 0)
		return 0;
	if (strcmp(k, "rtt") == 0)
		dv = &p->rtt;
	else if (strcmp(k, "bw") == 0)
		dv = &p->bw;
	else if (strcmp(k, "cpu") == 0)
		dv = &p->cpu;
	else if (strcmp(k, "copy") == 0)
		dv = &p->copy;
	else if (strcmp(k, "mem") == 0)
		uv = &p->mem;
	else if (strcmp(k, "iosize") == 0)
		uv = &p->iosize;
	else if (strcmp(k, "size") == 0)
		uv = &p->size;
	else if (strcmp(k, "max") == 0)
		uv = &p->max;
	else if (strcmp(k, "qd") == 0) {
		uv = &p->qd;
		size = false;
	} else if (strcmp(k, "disk") == 0) {
		if (*v == '\0' || strlen(v) >= sizeof(p->disk) || strchr(v, ':')) {
			set_err(cx->err, cx->errlen, "nfs+sim: bad disk '%s' in '%s' "
				"(a sim preset)", v, cx->spec);
			return -EINVAL;
		}
		snprintf(p->disk, sizeof(p->disk), "%s", v);
		return 0;
	} else {
		set_err(cx->err, cx->errlen, "nfs+sim: unknown parameter '%s' in '%s'", k,
			cx->spec);
		return -EINVAL;
	}
	if (dv != NULL) {
		bool ms = dv == &p->rtt || dv == &p->cpu;

		if (parse_double(v, dv) < 0 || !isfinite(*dv) ||
		    (ms ? *dv < 0 || *dv > SIM_MS_MAX : *dv < SIM_MBS_MIN || *dv > 1e9)) {
			set_err(cx->err, cx->errlen, ms ? "nfs+sim: bad %s '%s' in '%s' "
				"(0 to 60000 ms)" : "nfs+sim: bad %s '%s' in '%s' "
				"(0.001 to 1e9 MB/s)", k, v, cx->spec);
			return -EINVAL;
		}
		return 0;
	}
	if (uv == &p->max)
		snprintf(cx->max_given, sizeof(cx->max_given), "%s", v);
	if ((size ? parse_size(v, uv) : parse_uint(v, uv)) < 0 ||
	    (uv == &p->qd && (*uv < 1 || *uv > 128)) ||
	    (uv == &p->iosize && (*uv < 512 || *uv > (16u << 20))) ||
	    (uv == &p->mem && *uv < PAGE) || (uv == &p->max && *uv > (1ull << 36)) ||
	    (uv == &p->size && *uv > (1ull << 36))) {
		set_err(cx->err, cx->errlen, "nfs+sim: bad %s '%s' in '%s'", k, v, cx->spec);
		return -EINVAL;
	}
	return 0;
}

int
nfs_sim_open(const char *spec, const char *opts, int flags, struct nfs_xport **xp,
	     struct nfs_file_info *info, char *err, size_t errlen)
{
	struct ns *s = calloc(1, sizeof(*s));
	struct parse_ctx cx = { .spec = spec, .err = err, .errlen = errlen };
	char dspec[96], *buf;
	int r = 0, i;

	(void)flags;
	if (s == NULL)
		return -ENOMEM;
	s->x.ops = &ns_ops;
	s->p = presets[0].p;
	snprintf(s->preset, sizeof(s->preset), "%s", presets[0].name);
	cx.p = &s->p;
	cx.preset = s->preset;
	for (cx.pass = 0; cx.pass < 2 && r == 0; cx.pass++) {
		if ((buf = strdup(opts)) == NULL) {
			r = -ENOMEM;
			break;
		}
		r = parse_kv_list(buf, ',', set_key, &cx, "nfs+sim", err, errlen);
		free(buf);
	}
	if (r < 0)
		goto fail;
	if (cx.max_given[0] != '\0' && s->p.max < s->p.size) {
		set_err(err, errlen, "nfs+sim: max '%s' is less than size %llu in '%s'",
			cx.max_given, (unsigned long long)s->p.size, spec);
		r = -EINVAL;
		goto fail;
	}
	s->p.max = MAX(s->p.max, s->p.size);
	s->p.max = DIV_ROUND_UP(s->p.max, PAGE) * PAGE;
	/* a WRITE's pages and its edges fit at once (make_room keeps them) */
	s->p.mem = MAX(s->p.mem, 2 * s->p.iosize + 4 * PAGE);
	s->rtt_s = s->p.rtt / 1e3;
	s->cpu_s = s->p.cpu / 1e3;
	s->bw_bps = s->p.bw * 1e6;
	s->copy_bps = s->p.copy * 1e6;
	snprintf(dspec, sizeof(dspec), "sim:preset=%s,size=%llu", s->p.disk,
		 (unsigned long long)s->p.max);
	r = dev_open_spec(dspec, DEV_OPEN_INNER, &s->disk, err, errlen);
	if (r < 0)
		goto fail;
	if (!s->disk->is_virtual) {
		set_err(err, errlen, "nfs+sim: disk '%s' is not on the virtual clock", s->p.disk);
		r = -EINVAL;
		goto fail;
	}
	s->npages = s->p.max / PAGE;
	s->page = calloc(s->npages, sizeof(*s->page));
	s->dirty = calloc(s->npages, sizeof(*s->dirty));
	s->ondisk = calloc(s->npages, sizeof(*s->ondisk));
	if (s->page == NULL || s->dirty == NULL || s->ondisk == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < NPROC; i++)
		atomic_init(&s->n_rpc[i], 0);
	atomic_init(&s->n_disk_reads, 0);
	atomic_init(&s->n_disk_writes, 0);
	memcpy(s->verf, "sim-boot", NFS_VERF_SIZE);
	s->fsize = s->p.size; /* zeros: a hole */
	s->epoch = vclock_now();
	changed(s, vclock_now());
	info->server = strdup("sim");
	info->export = strdup("/export");
	info->path = strdup("file");
	if (info->server == NULL || info->export == NULL || info->path == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	info->size = s->fsize;
	info->rtmax = info->wtmax = (uint32_t)s->p.iosize;
	info->is_virtual = true;
	info->qd = (uint32_t)s->p.qd;
	*xp = &s->x;
	return 0;
fail:
	ns_close(&s->x);
	return r;
}
