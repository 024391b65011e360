/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cluster.c - BSD-style clustering: a read miss becomes one synchronous
 * cluster plus asynchronous read-ahead; full blocks written in sequence
 * go out as write clusters (write-behind).
 *
 * Sizes: a read cluster is c->rcluster blocks (maxphys/bsize, or
 * maxbsize/bsize with cluster=lite, 1 with cluster=off); write clusters
 * are c->wcluster blocks.  Read-ahead clusters and write-behind clusters
 * are aligned to multiples of their size, so that a steady stream reaches
 * the device in whole clusters.
 *
 * Invariants:
 *  1. A cluster is built only from blocks not in the cache; it stops at
 *     the first cached block, at EOF, and (for extensions) at the first
 *     block for which no buffer is free without waiting.
 *  2. Read-ahead never passes EOF and never runs when the sequential
 *     count is 0.
 *  3. The first block of each read-ahead cluster carries the trip wire
 *     BF_RAM; a hit on it extends the window (readahead()).
 *  4. Called with c->lock held; each submission drops it for a moment.
 */
#include <errno.h>
#include <string.h>

#include "cache.h"

/*
 * Build a cluster of missing blocks [lbn, end) after `first` (an INVAL
 * buffer already held for lbn, or NULL to allocate without waiting), and
 * submit it.  Returns the blocks submitted.
 */
static int
build_read(clio_cache *c, struct cobj *o, uint64_t lbn, uint64_t end,
	   struct buf *first, bool ahead, bool wait, int *result)
{
	struct buf *run[1024];
	uint64_t l;
	int n = 0, r, i, err = 0;

	if (end - lbn > 1024)
		end = lbn + 1024;
	if (first != NULL)
		run[n++] = first;
	for (l = lbn + (first != NULL); l < end; l++) {
		struct buf *b;

		if (buf_lookup(c, o, l) != NULL)
			break;
		b = getblk(c, o, l, true, &err);
		if (b == NULL)
			break;
		run[n++] = b;
	}
	if (n == 0)
		return 0;
	if (ahead) {
		run[0]->b_flags |= BF_RAM;
		for (i = 0; i < n; i++)
			run[i]->b_flags |= BF_RA;
		c->st.readahead_blocks += (uint64_t)n;
	}
	/* the holds of the extension buffers pass to the I/O */
	for (i = first != NULL; i < n; i++)
		run[i]->b_hold--;
	r = bio_submit(c, o, CLIO_OP_READ, run, n, wait);
	if (result != NULL)
		*result = r;
	return n;
}

/*
 * Read-ahead from just after lbn to lbn + min(seq, read_max) blocks (at
 * least two clusters once the window has reached one), in aligned
 * clusters, skipping what is cached.
 */
void
readahead(clio_cache *c, struct cobj *o, uint64_t lbn, uint32_t seq)
{
	uint64_t eof = obj_nblocks(c, o), C = c->rcluster, end, start, win;

	if (seq == 0)
		return;
	/* cluster=off: the one-block read-ahead of breadn() */
	if (c->conf.cluster == CLIO_CLUSTER_OFF) {
		if (seq > 1 && lbn + 1 < eof && buf_lookup(c, o, lbn + 1) == NULL)
			build_read(c, o, lbn + 1, lbn + 2, NULL, true, false, NULL);
		return;
	}
	/* a stream that has reached whole clusters keeps two in flight, or
	 * as many as the device serves at once: up to 8 as long as they take
	 * at most an eighth of the cache, more on a deeper device (a remote
	 * one, where a cluster's round trip is long) within a quarter */
	win = MIN(seq, c->conf.read_max);
	if (win >= C) {
		uint64_t n = MIN(MIN(8u, o->o_qd), c->nbuf / (8 * C));

		if (o->o_qd > 8)
			n = MAX(n, MIN((uint64_t)o->o_qd, c->nbuf / (4 * C)));
		win = MAX(win, MAX(2u, n) * C);
	}
	end = MIN(lbn + win, eof);
	/* past the first cluster, issue whole aligned clusters only */
	if (end < eof && end - lbn > C && end / C * C > lbn + 1)
		end = end / C * C;
	for (start = lbn + 1; start < end; start++)
		if (buf_lookup(c, o, start) == NULL)
			break;
	while (start < end) {
		uint64_t cl_end = MIN(end, (start / C + 1) * C);
		int n = build_read(c, o, start, cl_end, NULL, true, false, NULL);

		if (n == 0)
			break;
		/* the lock was dropped: look again for the next hole */
		for (start += (uint64_t)n; start < end; start++)
			if (buf_lookup(c, o, start) == NULL)
				break;
	}
}

/*
 * Start reading the missing blocks [lbn, end) without waiting, in
 * clusters of at most the cluster size, as read-ahead (a reader needs
 * them next).  Stops at the first block that is cached or that gets no
 * buffer without waiting; returns the blocks submitted.
 */
uint64_t
read_start(clio_cache *c, struct cobj *o, uint64_t lbn, uint64_t end)
{
	uint64_t done = 0;

	end = MIN(end, obj_nblocks(c, o));
	while (lbn + done < end) {
		uint64_t from = lbn + done;
		int n;

		if (buf_lookup(c, o, from) != NULL)
			break;
		n = build_read(c, o, from, MIN(end, from + c->rcluster), NULL,
			       true, false, NULL);
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	return done;
}

/*
 * A miss on lbn: read one synchronous cluster covering up to totread
 * bytes (at least the block), then start read-ahead, then wait for the
 * cluster.  On success *bp is lbn's buffer, held: valid, or FREE if a
 * truncate or a direct write dropped it meanwhile (look again).
 */
int
cluster_read(clio_cache *c, struct cobj *o, uint64_t lbn, size_t totread,
	     uint32_t seq, bool ahead, struct buf **bp)
{
	uint64_t eof = obj_nblocks(c, o), nblks;
	struct buf *b;
	int err = 0, r = 0;
	uint64_t rerrseq;

	for (;;) {
		b = getblk(c, o, lbn, false, &err);
		if (b == NULL)
			return err;
		if (b->b_state == B_CLEAN || b->b_state == B_DIRTY ||
		    b->b_state == B_WRITING) {
			buf_touch(c, b);
			*bp = b;
			return 0;
		}
		if (b->b_state == B_INVAL && b->b_hold == 1)
			break; /* ours to fill */
		/* being read or set up by another thread */
		b->b_hold--;
		buf_wait(c, b);
	}
	c->st.misses++;
	nblks = DIV_ROUND_UP(MAX(totread, (size_t)1), c->conf.bsize);
	nblks = MIN(nblks, (uint64_t)c->rcluster);
	if (lbn + nblks > eof)
		nblks = eof > lbn ? eof - lbn : 1;
	if (nblks < 1)
		nblks = 1;
	/* the synchronous cluster, then read-ahead, then wait for ours */
	rerrseq = o->o_rerrseq;
	if (!ahead || seq == 0) {
		/* no read-ahead to start: the read runs in this thread */
		build_read(c, o, lbn, lbn + nblks, b, false, true, &r);
	} else {
		build_read(c, o, lbn, lbn + nblks, b, false, false, &r);
		if (r == 0)
			readahead(c, o, lbn, seq);
	}
	buf_wait_read(c, b);
	/* valid: another thread may have dirtied or begun writing it since
	 * the read completed; a failed read left it FREE, and so did a
	 * truncate or a direct write that dropped it after the read: that
	 * one is no error, the caller looks again */
	if (r == 0 && b->b_state == B_FREE && o->o_rerrseq == rerrseq) {
		*bp = b;
		return 0;
	}
	if (r < 0 || !buf_valid(b)) {
		buf_release(c, b);
		return r < 0 ? r : -(o->o_rerr ? o->o_rerr : EIO);
	}
	buf_touch(c, b);
	*bp = b;
	return 0;
}

/*
 * A handle has just completed block lbn (written to its end).  Push the
 * write cluster when the aligned window fills (write_behind 1), or the
 * window before it (write_behind 2); when the sequence breaks, push what
 * the handle left behind.  Nothing is pushed for a random writer (seq 0):
 * the flusher and fsync gather those later.
 */
void
cluster_write(clio_cache *c, clio_file *f, uint64_t lbn, uint32_t seq)
{
	struct cobj *o = f->f_obj;
	uint64_t C = c->wcluster;
	int64_t last = f->f_lastw;

	f->f_lastw = (int64_t)lbn;
	if (c->conf.write_behind == 0 || seq == 0)
		return;
	if (last >= 0 && (uint64_t)last + 1 != lbn) {
		uint64_t w = (uint64_t)last / C * C;
		push_range(c, o, w, (uint64_t)last);
	}
	if ((lbn + 1) % C != 0)
		return; /* an append keeps growing its cluster until full */
	if (c->conf.write_behind == 1) {
		push_range(c, o, lbn / C * C, lbn);
	} else if (lbn / C >= 1) {
		uint64_t w = (lbn / C - 1) * C;
		push_range(c, o, w, w + C - 1);
	}
}
