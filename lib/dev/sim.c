/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sim.c - the simulated disk: `sim:preset=NAME[,PARAM=V ...]`.
 *
 * A mechanistic disk in the tradition of DiskSim (Ruemmler & Wilkes,
 * "An introduction to disk drive modeling", 1994).  One command is served
 * at a time, in arrival order (a queue of one).  A command's time is
 *
 *   start  = max(arrival, busy_until)            the drive takes it
 *   + overhead                                   controller work
 *   then, by kind:
 *   read hit   the data is (or soon will be) in the read-ahead segment:
 *              done when its last sector is in, plus the bus transfer
 *   media op   seek(|cylinder change|) + rotational wait for the first
 *              sector + transfer at media speed, losing `skew` sectors at
 *              each track switch; the bus transfer overlaps the media
 *   cached write  bus transfer into the write cache (waiting for room
 *              when full); the cache destages in FIFO order as media ops
 *   flush      done when the last destage has finished
 *
 * Geometry: LBA L (512-byte sectors) lies on track L / spt, cylinder
 * L / (spt * heads), at angular slot (L mod spt + (L / spt) * skew) mod spt.
 * The head is over slot floor(t / sector_time) mod spt at time t: the
 * angular position is a pure function of time, so a command that arrives
 * just after its sector went by waits almost a whole turn.  That is the
 * effect the presets are calibrated on: back-to-back writes on a drive
 * without a write cache each miss their first sector by the overhead.
 * Cylinder switches inside a transfer cost the same skew as head switches
 * (drives lay out a larger cylinder skew that hides the one-cylinder seek;
 * we fold it into `skew`).  With rpm=0 there is no rotation: a transfer
 * takes bytes / rate.
 *
 * Read-ahead (ra > 0): after a read the drive keeps reading sequentially
 * into its one segment until it holds `ra` bytes beyond the last request
 * or another command arrives.  A read starting inside the segment is a
 * hit and extends it; a segment that filled up resumes when its next
 * sector comes round again.  Any other command stops the stream; a write
 * overlapping the segment invalidates it.  Reads are never served from
 * the write cache (timing only; the data is always current).
 *
 * Parameters (after or instead of a preset; order does not matter, the
 * preset applies first; without one the base is "ssd"):
 *   rpm spt heads skew        rotation (0: none), geometry, track skew
 *   seek_knee seek_a seek_b seek_c seek_e
 *                             HPL seek: d=0: 0; d<knee: a + b sqrt(d);
 *                             else c + e d (ms, d in cylinders)
 *   overhead host             ms per command at the drive / at the host
 *   rate bus                  MB/s (10^6 B/s): media when rpm=0; host
 *                             transfer (0: instantaneous)
 *   ra wcache maxio size      bytes, with K/M/G/T suffixes
 *   clock=virtual|real  qd=N  clock; requests in flight with clock=real
 *
 * Clocks: with clock=virtual (the default) io() never sleeps: it reads
 * p->t_submit and stamps p->t_start and p->t_done.  With clock=real the
 * same model runs on now_monotonic() and io() sleeps until its t_done.
 *
 * Data: sparse 64 KiB chunks, allocated on the first write that carries a
 * nonzero byte; absent chunks read as zeros.
 *
 * Invariants (checked by sim_check() in CLIO_DEBUG builds):
 *  1. busy_until never decreases; each command starts at or after it.
 *  2. Media transfers never overlap: each starts at or after media_free,
 *     the end of the last one scheduled, and after the read-ahead stream
 *     was stopped by its command's arrival.
 *  3. wc_used is the sum of the lengths in the destage FIFO and, after a
 *     cached write is admitted, at most wcache; FIFO ends are ascending.
 *  4. seg_lo <= seg_limit <= nsect and seg_base <= seg_limit when the
 *     segment is valid; a stopped segment holds [seg_lo, seg_limit).
 *  5. nalloc counts the non-NULL entries of chunks[].
 *  6. s->lock guards all of the above; io() sleeps without it.
 */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define SECTOR 512u
#define CHUNK_SHIFT 16
#define CHUNK_SIZE ((size_t)1 << CHUNK_SHIFT)
#define MAX_SIZE (1ull << 40)	/* 1T: keeps the chunk table at 128 MB */
#define MAX_MAXIO (1ull << 30)
#define MAX_QD 256
#define MAX_KV 64
#define ROT_EPS 1e-6		/* slots: "already there" despite rounding */

/* Parameters in the units the user writes: ms, MB/s (10^6 B/s), bytes. */
struct sim_params {
	double rpm;
	uint64_t spt, heads, skew;
	double seek_knee, seek_a, seek_b, seek_c, seek_e;
	double overhead;
	double rate;
	double bus;
	uint64_t ra, wcache, maxio, size;
	double host;
	uint64_t qd;
	int real;
};

/*
 * Presets.  Each is fitted to a seed's published numbers; the derivations
 * follow the table.  "Turn" is one revolution.
 */
#define DISK(rpm_, spt_, heads_, skew_, knee_, a_, b_, c_, e_, ovh_, rate_,   \
	     bus_, ra_, wc_, maxio_, size_)                                    \
	{ .rpm = rpm_, .spt = spt_, .heads = heads_, .skew = skew_,            \
	  .seek_knee = knee_, .seek_a = a_, .seek_b = b_, .seek_c = c_,        \
	  .seek_e = e_, .overhead = ovh_, .rate = rate_, .bus = bus_,          \
	  .ra = ra_, .wcache = wc_, .maxio = maxio_, .size = size_,            \
	  .host = 0, .qd = 1, .real = 0 }
#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

static const struct {
	const char *name;
	struct sim_params p;
} presets[] = {
	/*	     rpm   spt   hd skew knee  seek_a seek_b seek_c seek_e
	 *	     overhead rate bus ra wcache maxio size */
	{ "rz25", DISK(5400, 57, 8, 7, 250, 1.67, 0.38, 6.55, 0.00482,
		       1.5, 0, 7.2, 28 * KiB, 0, 64 * KiB, 426 * MiB) },
	{ "ad2009", DISK(7200, 1000, 4, 80, 500, 0.8, 0.3, 4.84, 0.00532,
			 0.167, 0, 150, 1 * MiB, 0, 64 * KiB, 4 * GiB) },
	{ "da2002", DISK(0, 0, 0, 0, 0, 0, 0, 0, 0,
			 0.93, 47.5, 0, 0, 0, 64 * KiB, 4 * GiB) },
	{ "wd1999", DISK(5400, 300, 4, 40, 1000, 1.5, 0.2, 5.76, 0.00204,
			 0.06, 0, 10.4, 256 * KiB, 0, 64 * KiB, 4 * GiB) },
	{ "ssd", DISK(0, 0, 0, 0, 0, 0, 0, 0, 0,
		      0.065, 1400, 3200, 0, 64 * MiB, 1 * MiB, 1 * GiB) },
};
#define DEFAULT_PRESET "ssd"	/* what `sim:` without preset= starts from */

/*
 * rz25 - DEC RZ25, 426 MB 3.5" SCSI-2, seed 000 (NetBSD PR kern/1718):
 *   dd bs=1M count=86 onto an 8K FFS, maxcontig 8, took 105 s with 16 KiB
 *   clusters and 52 s with 64 KiB ones; fit t = 12.85 ms + n / 2.63 MB/s.
 *   No RZ25 model exists, so it borrows the validated RZ26 (clustering.md
 *   section 5.2) where the RZ25's own figures are unknown:
 *   - 5400 rpm (11.11 ms a turn), 57 sectors a track: 2.63 MB/s raw, the
 *     fitted rate; 8 heads give 1913 cylinders for 426 MB.
 *   - skew 7 sectors (1.36 ms): the RZ26's track skew.
 *   - seek: an HPL fit of the RZ26's extracted curve, 1.67 + 0.38 sqrt(d)
 *     below 250 cylinders, 6.55 + 0.00482 d above; within 0.3 ms of it
 *     from 2 to 2569 cylinders (1 ms slow at 1 cylinder); 9.3 ms
 *     on average over the 426 MB.
 *   - overhead 1.5 ms (RZ26 read/write miss 1.489), bus 7.2 MB/s (RZ26
 *     0.0707 ms a block), read-ahead segment 28K (RZ26: 57 blocks), no
 *     write cache, maxio 64K (MAXPHYS of 1995).
 *   Consequence: a queued write finds its first sector passed by 1.5 ms of
 *   overhead and waits the rest of the turn, so each costs 11.11 ms +
 *   n x 0.195 ms/sector + 7/57 of that in track switches: 18.1 ms for
 *   16 KiB, 39.1 ms for 64 KiB; 86 MiB in 99.7 s and 53.8 s (the seed's
 *   file system also wrote its metadata).
 *
 * ad2009 - SATA disk of seed 001 (freebsd-arch, 2009): dd from /dev/ad2
 *   ran at 55-57 MB/s for every bs from 16K to 128M (the ata driver splits
 *   at 64K), and at 37 MB/s with bs=8K ("firmware can't keep up").
 *   - A rate flat in the transfer size is the media rate with read-ahead:
 *     the next command arrives before its data has passed the head.
 *     7200 rpm, 1000 sectors a track (61.4 MB/s raw), skew 80 (0.67 ms
 *     head switch): 56.9 MB/s sustained.
 *   - The 8K figure is the command rate: overhead + 8K / bus = 0.221 ms;
 *     with a 150 MB/s bus that is overhead 0.167 ms.  At 16K the host side
 *     takes 0.276 ms < 0.288 ms of media, so 16K and up stay at the media
 *     rate.  (A straight line 0.01 ms + n / 57 MB/s fits 16K and up just
 *     as well but cannot give the 8K point.)
 *   - ra 1M: when the host is the slower side the segment fills and waits
 *     a turn for its sector; 1M covers a turn of 37 MB/s consumption.
 *   - seek 1.1 ms track-to-track, 8.2 ms on average, 16 ms across the
 *     default 4 GB (2097 cylinders).
 *
 * da2002 - SCSI disk of seed 002 (FreeBSD UFS rewrite, 2002): eight 8K
 *   reads per 64K write gave 813 tps, 14 KB/t, 11.2 MB/s; 64K reads and
 *   64K writes gave 434 tps, 63.6 KB/t, 27 MB/s.  Both fit one line,
 *   t = 0.93 ms + n / 47.5 MB/s, with no positioning term at all although
 *   the reads run up to ~1 MiB ahead of the writes: the drive's cache and
 *   tagged queueing hid rotation and the short seeks.  So: rpm=0, no
 *   seeks, rate 47.5, overhead 0.93 (random access on this preset is
 *   therefore optimistic).  maxio 64K so that the device sees the seed's
 *   64 KB transfers (FFS clusters were maxcontig 8 x 8K).
 *
 * wd1999 - IDE disk of seed 003 (cvs-all, 1999): raw dd bs=32K 312 tps,
 *   bs=2K 3891 tps: t = 0.06 ms + n / 10.4 MB/s at both sizes.
 *   - With read-ahead the media alone would give 2K reads the same bytes/s
 *     as 32K ones (~5000 tps); a per-byte cost paid by every transfer is
 *     the bus: ATA PIO with the CPU moving the words, 10.4 MB/s.  So bus
 *     10.4, overhead 0.06, and media that outruns the bus: 5400 rpm,
 *     300 sectors a track (13.8 MB/s raw), skew 40 (1.5 ms head switch):
 *     12.2 MB/s sustained.
 *   - ra 256K (half of a 512 KB cache) covers the turn a full segment
 *     waits for its sector (10 MB/s x 11.1 ms = 115 KB).
 *   - seek 1.7 ms track-to-track, 10.2 ms on average, 20 ms across the
 *     default 4 GB (6990 cylinders), so random 4K reads cost ~17 ms.
 *
 * ssd - a current NVMe SSD (DESIGN.md): 4 KiB synchronous reads ~60 MB/s,
 *   1 MiB ones ~1.3 GB/s: t = 0.065 ms + n / 1400 MB/s.  No seek or
 *   rotation; a 64 MB write cache filled at 3200 MB/s (PCIe 3 x4) and
 *   destaged at the media rate; maxio 1M; 1 GB.
 */

struct wc_ent {
	double end;	/* when its destage finishes */
	uint64_t len;
};

struct sim {
	pthread_mutex_t lock;
	struct sim_params p;
	char preset[16];	/* the preset the parameters started from */

	/* derived, in seconds, bytes per second and sectors */
	double st;		/* time of one sector under the head */
	double rev;		/* one turn */
	double ovh, host;
	double rate_bps, bus_bps; /* bus 0: instantaneous */
	uint64_t nsect, ra_sect, per_cyl;

	/* mechanism */
	double busy_until;	/* the controller is free (invariant 1) */
	double media_free;	/* the last scheduled media op ends (2) */
	uint64_t cyl;		/* where the heads are */

	/* read-ahead segment: the stream read [seg_base, ...) from seg_t0 */
	bool seg_valid, seg_live;
	uint64_t seg_lo, seg_base, seg_limit;
	double seg_t0;

	/* write cache: destage FIFO (a ring) */
	struct wc_ent *wc;
	size_t wc_head, wc_n, wc_cap;
	uint64_t wc_used;
	double destage_end;

	/* data */
	unsigned char **chunks;
	size_t nchunks, nalloc;
};

size_t sim_allocated_bytes(clio_dev *d);

/* ------------------------------------------------------------ geometry */

static uint64_t
lba_cyl(const struct sim *s, uint64_t l)
{
	return s->per_cyl ? l / s->per_cyl : 0;
}

static uint64_t
lba_slot(const struct sim *s, uint64_t l)
{
	uint64_t track = l / s->p.spt;

	return (l % s->p.spt + (track % s->p.spt) * s->p.skew) % s->p.spt;
}

/* HPL seek curve (Ruemmler & Wilkes): 0, a + b sqrt(d), or c + e d. */
static double
seek_time(const struct sim *s, uint64_t from, uint64_t to)
{
	double d = (double)(from > to ? from - to : to - from);

	if (d == 0)
		return 0;
	if (d < s->p.seek_knee)
		return (s->p.seek_a + s->p.seek_b * sqrt(d)) * 1e-3;
	return (s->p.seek_c + s->p.seek_e * d) * 1e-3;
}

/* Media time of [a, b) read or written in one pass from a's start. */
static double
xfer_time(const struct sim *s, uint64_t a, uint64_t b)
{
	if (b <= a)
		return 0;
	if (s->p.rpm == 0)
		return (double)((b - a) * SECTOR) / s->rate_bps;
	return (double)(b - a) * s->st +
	       (double)((b - 1) / s->p.spt - a / s->p.spt) *
		       (double)s->p.skew * s->st;
}

/* The first time >= t at which sector l begins to pass under the head. */
static double
rot_wait(const struct sim *s, double t, uint64_t l)
{
	double pos, w;

	if (s->p.rpm == 0)
		return t;
	pos = fmod(t / s->st, (double)s->p.spt);
	w = (double)lba_slot(s, l) - pos;
	if (w < 0)
		w += (double)s->p.spt;
	if (w > (double)s->p.spt - ROT_EPS)
		w = 0;
	return t + w * s->st;
}

static double
bus_time(const struct sim *s, size_t len)
{
	return s->bus_bps > 0 ? (double)len / s->bus_bps : 0.0;
}

/* Seek, wait for sector l and transfer n sectors, no earlier than t. */
static double
media_op(struct sim *s, uint64_t l, uint64_t n, double t, double *t_first)
{
	double end;

	t = MAX(t, s->media_free);
	t += seek_time(s, s->cyl, lba_cyl(s, l));
	t = rot_wait(s, t, l);
	end = t + xfer_time(s, l, l + n);
	s->cyl = lba_cyl(s, l + n - 1);
	s->media_free = end;
	*t_first = t;
	return end;
}

/* ------------------------------------------------------------ read-ahead */

/* When the stream has read every sector below l (0: long before). */
static double
stream_time(const struct sim *s, uint64_t l)
{
	if (l <= s->seg_base)
		return 0;
	return s->seg_t0 + xfer_time(s, s->seg_base, l);
}

/* The first sector the stream has not read by time t. */
static uint64_t
stream_reached(const struct sim *s, double t)
{
	uint64_t lo, hi;

	if (!s->seg_live)
		return s->seg_limit;
	if (t <= s->seg_t0)
		return s->seg_base;
	lo = s->seg_base;
	hi = s->seg_limit;
	while (lo < hi) { /* the largest l with stream_time(l) <= t */
		uint64_t mid = lo + (hi - lo + 1) / 2;
		if (stream_time(s, mid) <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Another command arrived at t: the stream stops where it is. */
static void
stream_stop(struct sim *s, double t)
{
	uint64_t r;

	if (!s->seg_valid || !s->seg_live)
		return;
	r = stream_reached(s, t);
	s->seg_limit = r;
	s->seg_live = false;
	s->cyl = lba_cyl(s, r < s->nsect ? r : s->nsect - 1);
}

/* Start (or restart) the stream at sector l, positioning from t. */
static void
stream_start(struct sim *s, uint64_t l, double t)
{
	t = MAX(t, s->media_free);
	t += seek_time(s, s->cyl, lba_cyl(s, l));
	s->seg_base = l;
	s->seg_t0 = rot_wait(s, t, l);
	s->seg_live = true;
	s->cyl = lba_cyl(s, l);
}

/* ------------------------------------------------------------ write cache */

static void
wc_pop(struct sim *s)
{
	s->wc_used -= s->wc[s->wc_head].len;
	s->wc_head = (s->wc_head + 1) % s->wc_cap;
	s->wc_n--;
}

/* Drop the entries destaged by time t. */
static void
wc_prune(struct sim *s, double t)
{
	while (s->wc_n > 0 && s->wc[s->wc_head].end <= t)
		wc_pop(s);
}

/* Room for one more entry; false if memory is short. */
static bool
wc_reserve(struct sim *s)
{
	size_t cap = s->wc_cap ? 2 * s->wc_cap : 64, i;
	struct wc_ent *n;

	if (s->wc_n < s->wc_cap)
		return true;
	n = malloc(cap * sizeof(*n));
	if (n == NULL)
		return false;
	for (i = 0; i < s->wc_n; i++)
		n[i] = s->wc[(s->wc_head + i) % s->wc_cap];
	free(s->wc);
	s->wc = n;
	s->wc_cap = cap;
	s->wc_head = 0;
	return true;
}

static void
wc_push(struct sim *s, double end, uint64_t len)
{
	s->wc[(s->wc_head + s->wc_n) % s->wc_cap] = (struct wc_ent){ end, len };
	s->wc_n++;
	s->wc_used += len;
	s->destage_end = MAX(s->destage_end, end);
}

/* ------------------------------------------------------------ the model */

#ifdef CLIO_DEBUG
/* Invariants 1-5; the O(n) parts only when `full` (at close). */
static int
sim_check(const struct sim *s, double prev_busy, int full)
{
	uint64_t sum = 0;
	size_t i, n = 0;
	double prev = -1e300;

	if (s->busy_until < prev_busy)
		return 0;
	if (s->p.wcache && s->wc_used > s->p.wcache)
		return 0;
	if (s->seg_valid && (s->seg_lo > s->seg_limit ||
			     s->seg_limit > s->nsect ||
			     s->seg_base > s->seg_limit))
		return 0;
	if (s->nalloc > s->nchunks || !full)
		return 1;
	for (i = 0; i < s->wc_n; i++) {
		const struct wc_ent *e = &s->wc[(s->wc_head + i) % s->wc_cap];
		if (e->end < prev)
			return 0;
		prev = e->end;
		sum += e->len;
	}
	for (i = 0; i < s->nchunks; i++)
		n += s->chunks[i] != NULL;
	return sum == s->wc_used && n == s->nalloc;
}
#define SIM_CHECK(s, prev_busy, full) assert(sim_check(s, prev_busy, full))
#else
#define SIM_CHECK(s, prev_busy, full) ((void)0)
#endif

/* Serve one command arriving at t_arr: its start and completion times. */
static double
sim_serve(struct sim *s, enum clio_op op, uint64_t off, size_t len,
	  double t_arr, double *t_start)
{
	uint64_t c = off / SECTOR;
	uint64_t e = DIV_ROUND_UP(off + len, SECTOR);
	double prev_busy = s->busy_until;
	double start = MAX(t_arr, prev_busy);
	double t_cmd = start + s->ovh;
	double done, t_first, t_end;

	*t_start = start;
	switch (op) {
	case CLIO_OP_READ:
		if (s->seg_valid && c >= s->seg_lo && c < s->seg_limit) {
			/* hit: the segment has it or is reading towards it */
			uint64_t r = stream_reached(s, start);

			if (!s->seg_live || r >= s->seg_limit) {
				stream_stop(s, start);
				if (s->seg_limit < s->nsect)
					stream_start(s, s->seg_limit, t_cmd);
			}
			s->seg_limit = MIN(s->nsect, MAX(s->seg_limit,
							 e + s->ra_sect));
			s->seg_lo = c;
			done = MAX(t_cmd, stream_time(s, e)) + bus_time(s, len);
			break;
		}
		stream_stop(s, start);
		t_end = media_op(s, c, e - c, t_cmd, &t_first);
		done = MAX(t_end, t_first + bus_time(s, len));
		s->seg_valid = s->ra_sect > 0;
		if (s->seg_valid) {
			/* the stream goes on past the request */
			s->seg_live = true;
			s->seg_lo = s->seg_base = c;
			s->seg_t0 = t_first;
			s->seg_limit = MIN(s->nsect, e + s->ra_sect);
		}
		break;
	case CLIO_OP_WRITE:
		stream_stop(s, start);
		if (s->seg_valid && c < s->seg_limit && e > s->seg_lo)
			s->seg_valid = false;
		if (s->p.wcache == 0 || len > s->p.wcache || !wc_reserve(s)) {
			/* write-through: the data crosses the bus meanwhile */
			t_end = media_op(s, c, e - c, t_cmd, &t_first);
			done = MAX(t_end, t_cmd + bus_time(s, len));
			break;
		}
		/* write-back: wait for room, take the data, destage later */
		wc_prune(s, t_cmd);
		done = t_cmd;
		while (s->wc_used + len > s->p.wcache) {
			done = MAX(done, s->wc[s->wc_head].end);
			wc_pop(s);
		}
		done += bus_time(s, len);
		t_end = media_op(s, c, e - c, done, &t_first);
		wc_push(s, t_end, len);
		break;
	case CLIO_OP_FLUSH:
	default:
		stream_stop(s, start);
		done = MAX(t_cmd, s->destage_end);
		break;
	}
	s->busy_until = done;
	SIM_CHECK(s, prev_busy, 0);
	(void)prev_busy;
	return done;
}

/* ------------------------------------------------------------ data */

static bool
iov_range_is_zero(const struct iovec *iov, int iovcnt, size_t skip,
		  size_t len)
{
	int i;

	for (i = 0; i < iovcnt && len > 0; i++) {
		const unsigned char *b = iov[i].iov_base;
		size_t l = iov[i].iov_len, n;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		n = MIN(l - skip, len);
		b += skip;
		if (b[0] != 0 || memcmp(b, b + 1, n - 1) != 0)
			return false;
		len -= n;
		skip = 0;
	}
	return true;
}

/*
 * Move the data of a read or write.  A write first allocates the chunks it
 * needs, so that on -ENOMEM it has changed no byte (new chunks are zeros).
 */
static int
sim_data(struct sim *s, const struct dev_io *p)
{
	size_t done;
	int pass;

	for (pass = p->op == CLIO_OP_WRITE ? 0 : 1; pass < 2; pass++) {
		for (done = 0; done < p->len;) {
			uint64_t off = p->off + done;
			size_t ci = (size_t)(off >> CHUNK_SHIFT);
			size_t co = (size_t)(off & (CHUNK_SIZE - 1));
			size_t n = MIN(CHUNK_SIZE - co, p->len - done);
			unsigned char *ch = s->chunks[ci];

			if (pass == 0) {
				/* allocate, unless the data is all zeros */
				if (ch == NULL && !iov_range_is_zero(
					p->iov, p->iovcnt, done, n)) {
					ch = calloc(1, CHUNK_SIZE);
					if (ch == NULL)
						return -ENOMEM;
					s->chunks[ci] = ch;
					s->nalloc++;
				}
			} else if (p->op == CLIO_OP_READ) {
				if (ch != NULL)
					buf_to_iov(p->iov, p->iovcnt, done,
						   ch + co, n);
				else
					iov_memset(p->iov, p->iovcnt, done, 0,
						   n);
			} else if (ch != NULL) {
				iov_to_buf(p->iov, p->iovcnt, done, ch + co,
					   n);
			}
			done += n;
		}
	}
	return 0;
}

size_t
sim_allocated_bytes(clio_dev *d)
{
	struct sim *s = d->priv;
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->nalloc * CHUNK_SIZE;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* ------------------------------------------------------------ backend */

static void
sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static ssize_t
sim_io(clio_dev *d, struct dev_io *p)
{
	struct sim *s = d->priv;
	double t_arr, t_start, t_done;
	int r = 0;

	if (d->is_virtual) {
		/* host CPU time per command moves the shared clock */
		if (s->host > 0) {
			vclock_add(s->host);
			p->t_submit = MAX(p->t_submit + s->host, vclock_now());
		}
		t_arr = p->t_submit;
	} else {
		t_arr = now_monotonic() + s->host;
	}
	t_start = t_done = t_arr;
	if (p->op != CLIO_OP_FLUSH &&
	    (p->off > d->size || p->len > d->size - p->off))
		r = -EINVAL; /* the device layer should have caught it */
	else if (p->op == CLIO_OP_FLUSH || p->len > 0) {
		pthread_mutex_lock(&s->lock);
		if (p->op != CLIO_OP_FLUSH)
			r = sim_data(s, p);
		if (r == 0)
			t_done = sim_serve(s, p->op, p->off, p->len, t_arr,
					   &t_start);
		pthread_mutex_unlock(&s->lock);
	}

	if (d->is_virtual) {
		p->t_start = t_start;
		p->t_done = t_done;
	} else {
		sleep_until(t_done);
	}
	if (r < 0)
		return r;
	return p->op == CLIO_OP_FLUSH ? 0 : (ssize_t)p->len;
}

static void
sim_free(struct sim *s)
{
	size_t i;

	if (s == NULL)
		return;
	if (s->chunks != NULL)
		for (i = 0; i < s->nchunks; i++)
			free(s->chunks[i]);
	free(s->chunks);
	free(s->wc);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void
sim_close(clio_dev *d)
{
	SIM_CHECK((struct sim *)d->priv, 0, 1);
	sim_free(d->priv);
	dev_free(d);
}

/* ------------------------------------------------------------ parsing */

enum key_type { K_DOUBLE, K_SIZE, K_UINT, K_CLOCK };

static const struct {
	const char *name;
	enum key_type type;
	size_t off;
} keys[] = {
	{ "rpm", K_DOUBLE, offsetof(struct sim_params, rpm) },
	{ "spt", K_UINT, offsetof(struct sim_params, spt) },
	{ "heads", K_UINT, offsetof(struct sim_params, heads) },
	{ "skew", K_UINT, offsetof(struct sim_params, skew) },
	{ "seek_knee", K_DOUBLE, offsetof(struct sim_params, seek_knee) },
	{ "seek_a", K_DOUBLE, offsetof(struct sim_params, seek_a) },
	{ "seek_b", K_DOUBLE, offsetof(struct sim_params, seek_b) },
	{ "seek_c", K_DOUBLE, offsetof(struct sim_params, seek_c) },
	{ "seek_e", K_DOUBLE, offsetof(struct sim_params, seek_e) },
	{ "overhead", K_DOUBLE, offsetof(struct sim_params, overhead) },
	{ "rate", K_DOUBLE, offsetof(struct sim_params, rate) },
	{ "bus", K_DOUBLE, offsetof(struct sim_params, bus) },
	{ "ra", K_SIZE, offsetof(struct sim_params, ra) },
	{ "wcache", K_SIZE, offsetof(struct sim_params, wcache) },
	{ "maxio", K_SIZE, offsetof(struct sim_params, maxio) },
	{ "size", K_SIZE, offsetof(struct sim_params, size) },
	{ "host", K_DOUBLE, offsetof(struct sim_params, host) },
	{ "qd", K_UINT, offsetof(struct sim_params, qd) },
	{ "clock", K_CLOCK, offsetof(struct sim_params, real) },
};

struct kv_list {
	const char *k[MAX_KV], *v[MAX_KV];
	int n;
	char *err;
	size_t errlen;
};

static int
collect_kv(void *arg, const char *k, const char *v)
{
	struct kv_list *l = arg;

	if (l->n == MAX_KV) {
		set_err(l->err, l->errlen, "sim: too many parameters at '%s'", k);
		return -EINVAL;
	}
	l->k[l->n] = k;
	l->v[l->n] = v;
	l->n++;
	return 0;
}

static int
set_param(struct sim_params *p, const char *k, const char *v, char *err,
	  size_t errlen)
{
	char *field;
	double dv;
	uint64_t uv;
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i].name, k) == 0)
			break;
	if (i == sizeof(keys) / sizeof(keys[0])) {
		set_err(err, errlen, "sim: unknown parameter '%s'", k);
		return -EINVAL;
	}
	field = (char *)p + keys[i].off;
	switch (keys[i].type) {
	case K_DOUBLE:
		if (parse_double(v, &dv) < 0 || !isfinite(dv) || dv < 0) {
			set_err(err, errlen, "sim: bad %s '%s'", k, v);
			return -EINVAL;
		}
		memcpy(field, &dv, sizeof(dv));
		break;
	case K_SIZE:
	case K_UINT:
		if ((keys[i].type == K_SIZE ? parse_size(v, &uv)
					    : parse_uint(v, &uv)) < 0) {
			set_err(err, errlen, "sim: bad %s '%s'", k, v);
			return -EINVAL;
		}
		if (strcmp(k, "size") == 0 &&
		    (uv == 0 || uv % SECTOR != 0 || uv > MAX_SIZE)) {
			set_err(err, errlen, "sim: bad size '%s' (a multiple "
				"of 512, at most 1T)", v);
			return -EINVAL;
		}
		if (strcmp(k, "maxio") == 0 &&
		    (uv % SECTOR != 0 || uv > MAX_MAXIO)) {
			set_err(err, errlen, "sim: bad maxio '%s' (a multiple "
				"of 512, at most 1G; 0: no limit)", v);
			return -EINVAL;
		}
		if (strcmp(k, "qd") == 0 && (uv < 1 || uv > MAX_QD)) {
			set_err(err, errlen, "sim: bad qd '%s' (1 to %d)", v,
				MAX_QD);
			return -EINVAL;
		}
		memcpy(field, &uv, sizeof(uv));
		break;
	case K_CLOCK:
		if (strcmp(v, "virtual") == 0)
			p->real = 0;
		else if (strcmp(v, "real") == 0)
			p->real = 1;
		else {
			set_err(err, errlen,
				"sim: bad clock '%s' (virtual or real)", v);
			return -EINVAL;
		}
		break;
	}
	return 0;
}

/* Relations between parameters, once all are known (each value alone was
 * checked by set_param, the presets' by hand). */
static int
check_params(const struct sim_params *p, char *err, size_t errlen)
{
	if (p->rpm > 0 && (p->spt == 0 || p->heads == 0)) {
		set_err(err, errlen, "sim: rpm=%g needs spt and heads", p->rpm);
		return -EINVAL;
	}
	if (p->rpm > 1e6 || p->spt > (1u << 20) || p->heads > (1u << 20)) {
		set_err(err, errlen, "sim: geometry out of range (rpm=%g "
			"spt=%llu heads=%llu)", p->rpm,
			(unsigned long long)p->spt,
			(unsigned long long)p->heads);
		return -EINVAL;
	}
	if (p->rpm > 0 && p->skew >= p->spt) {
		set_err(err, errlen, "sim: skew %llu not below spt %llu",
			(unsigned long long)p->skew,
			(unsigned long long)p->spt);
		return -EINVAL;
	}
	if (p->rpm == 0 && p->rate <= 0) {
		set_err(err, errlen, "sim: rate=%g must be > 0 when rpm=0",
			p->rate);
		return -EINVAL;
	}
	return 0;
}

/* Fill *p from a preset and the user's parameters, in that order; the
 * preset's name goes to preset_out. */
static int
parse_opts(const char *opts, struct sim_params *p, char *preset_out,
	   size_t preset_len, char *err, size_t errlen)
{
	struct kv_list l;
	const char *preset = DEFAULT_PRESET;
	char *copy;
	size_t j;
	int i, r;

	memset(&l, 0, sizeof(l));
	l.err = err;
	l.errlen = errlen;
	copy = strdup(opts);
	if (copy == NULL)
		return -ENOMEM;
	r = parse_kv_list(copy, ',', collect_kv, &l, "sim", err, errlen);
	for (i = 0; r == 0 && i < l.n; i++) /* one at most (parse_kv_list) */
		if (strcmp(l.k[i], "preset") == 0)
			preset = l.v[i];
	if (r == 0) {
		for (j = 0; j < sizeof(presets) / sizeof(presets[0]); j++)
			if (strcmp(presets[j].name, preset) == 0)
				break;
		if (j == sizeof(presets) / sizeof(presets[0])) {
			set_err(err, errlen, "sim: unknown preset '%s'", preset);
			r = -EINVAL;
		} else {
			*p = presets[j].p;
			snprintf(preset_out, preset_len, "%s", presets[j].name);
		}
	}
	for (i = 0; r == 0 && i < l.n; i++)
		if (strcmp(l.k[i], "preset") != 0)
			r = set_param(p, l.k[i], l.v[i], err, errlen);
	free(copy);
	if (r == 0)
		r = check_params(p, err, errlen);
	return r;
}

/* The model's parameters in the units of its string, then what follows
 * from them. */
static void
sim_params(clio_dev *d, struct dev_params *o)
{
	struct sim *s = d->priv;
	const struct sim_params *p = &s->p;
	size_t i;

	dev_param(o, "preset", "%s", s->preset);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *field = (const char *)p + keys[i].off;
		double dv;
		uint64_t uv;

		switch (keys[i].type) {
		case K_DOUBLE:
			memcpy(&dv, field, sizeof(dv));
			dev_param(o, keys[i].name, "%g", dv);
			break;
		case K_SIZE:
		case K_UINT:
			memcpy(&uv, field, sizeof(uv));
			dev_param(o, keys[i].name, "%llu", (unsigned long long)uv);
			break;
		case K_CLOCK:
			dev_param(o, keys[i].name, "%s", p->real ? "real" : "virtual");
			break;
		}
	}
	if (p->rpm > 0) {
		dev_param(o, "revolution_ms", "%.4g", s->rev * 1e3);
		dev_param(o, "media_mbps", "%.4g",
			  (double)(p->spt * SECTOR) / s->rev / 1e6);
		dev_param(o, "cylinders", "%llu",
			  (unsigned long long)DIV_ROUND_UP(s->nsect, s->per_cyl));
	}
}

static const struct dev_ops sim_ops = {
	.scheme = "sim",
	.io = sim_io,
	.resize = NULL,
	.close = sim_close,
	.params = sim_params,
};

int
dev_sim_open(const char *opts, int flags, clio_dev **dp, char *err,
	     size_t errlen)
{
	struct sim_params p;
	struct sim *s;
	clio_dev *d;
	char *name, preset[16];
	int r;

	(void)flags; /* the device layer enforces CLIO_DEV_RDONLY */
	r = parse_opts(opts, &p, preset, sizeof(preset), err, errlen);
	if (r < 0)
		return r;

	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->p = p;
	memcpy(s->preset, preset, sizeof(preset));
	s->nchunks = (size_t)DIV_ROUND_UP(p.size, CHUNK_SIZE);
	s->chunks = calloc(s->nchunks, sizeof(*s->chunks));
	name = malloc(strlen(opts) + sizeof("sim:"));
	if (s->chunks == NULL || name == NULL) {
		free(name);
		sim_free(s);
		return -ENOMEM;
	}
	strcpy(name, "sim:");
	strcat(name, opts);

	s->rev = p.rpm > 0 ? 60.0 / p.rpm : 0;
	s->st = p.rpm > 0 ? s->rev / (double)p.spt : 0;
	s->ovh = p.overhead * 1e-3;
	s->host = p.host * 1e-3;
	s->rate_bps = p.rate * 1e6;
	s->bus_bps = p.bus * 1e6;
	s->nsect = p.size / SECTOR;
	s->ra_sect = DIV_ROUND_UP(p.ra, SECTOR);
	s->per_cyl = p.spt * p.heads;

	r = dev_alloc(&sim_ops, name, &d);
	free(name);
	if (r < 0) {
		sim_free(s);
		return r;
	}
	d->priv = s;
	d->size = p.size;
	d->sector = SECTOR;
	d->maxio = (uint32_t)p.maxio;
	d->is_virtual = !p.real;
	d->blocking = p.real;
	d->queue_depth = (uint32_t)p.qd;
	if (p.real)
		snprintf(d->engine, sizeof(d->engine),
			 "threads (clock=real: the model sleeps)");
	*dp = d;
	return 0;
}
