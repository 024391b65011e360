/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dd.c - `clio dd`: GNU dd 9.1's copy with clio's cache (or its direct
 * path) between the program and each device.  Operands: ddargs.c;
 * conversions: ddconv.c; what is printed: ddsummary.c; signals:
 * ddsignal.c.
 *
 * Order of work: every operand is parsed, the signals are blocked (before
 * any device or the cache starts a thread), the operands are checked and
 * dd's buffers allocated, all before anything is opened, so a bad operand
 * changes nothing (exit 64).  Then the input and output are opened, the
 * input skipped and the
 * output positioned (and truncated at seek= unless conv=notrunc), the
 * copy runs, conv=fsync syncs, the handles are closed (the last write-back
 * is counted, and its error reported, before the summary), the summary
 * goes to standard error (or, with --json, one JSON object to standard
 * output), the devices are closed (a writeback disk cache writes back
 * there: its error follows the summary), and a signal that ended the
 * copy is raised again.
 *
 * Invariants:
 *  1. Every byte counted in "records in" is handed to the output before
 *     the command ends, also when a signal ends the copy: the partial
 *     output block and the conversions' state are flushed, and the cache
 *     is written back at the close.
 *  2. An endpoint is a clio device (EP_CLIO: regular files, block
 *     devices and device strings), /dev/zero read as zeros (EP_ZERO), or
 *     a file descriptor (EP_FD: standard input and output, pipes, FIFOs,
 *     character devices, sockets, directories, the files of /proc and
 *     /sys, whose size says nothing), read and written with
 *     read(2) and write(2) after a poll that also watches the signals.
 *  3. Elapsed time is simulated time when every clio device involved runs
 *     on the virtual clock and both ends are named, wall time otherwise.
 *  4. if= and of= naming one regular file or block device share one clio
 *     device (in.dev == out.dev, closed once), so that the cache keeps
 *     the reads coherent with the writes, as one file is for GNU dd.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sysexits.h>
#include <unistd.h>

#include "dd.h"
#include "util.h"

#define ERRLEN 1024
#define SECTOR 512
#define MAX_READ 0x7ffff000 /* what Linux's read(2) gives at most, as GNU dd gets */

/* ------------------------------------------------------------ endpoints */

static bool
is_fd_path(const char *spec, struct stat *st)
{
	struct statfs fs;

	if (stat(spec, st) < 0)
		return false;
	if (S_ISREG(st->st_mode) && statfs(spec, &fs) == 0)
		/* a pseudo file system's file: its size says nothing */
		switch (fs.f_type) {
		case PROC_SUPER_MAGIC: case SYSFS_MAGIC: case DEBUGFS_MAGIC:
		case TRACEFS_MAGIC: case SECURITYFS_MAGIC:
		case CGROUP_SUPER_MAGIC: case CGROUP2_SUPER_MAGIC:
			return true;
		}
	return S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode) ||
	       S_ISSOCK(st->st_mode) || S_ISDIR(st->st_mode);
}

/* A device string that is a plain path (no type prefix). */
static bool
is_plain_path(const char *spec)
{
	const char *colon = strchr(spec, ':');

	return colon == NULL || spec[0] == '/' || spec[0] == '.' ||
	       access(spec, F_OK) == 0;
}

/* Check a device string without opening anything a user can see. */
static int
check_spec(const struct endpoint *ep)
{
	struct stat st;

	if (ep->spec == NULL || is_fd_path(ep->spec, &st))
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
open_error(const struct endpoint *ep, int e, bool output)
{
	fprintf(stderr, "clio dd: failed to open %s: %s\n", dd_quoteaf(ep->name),
		strerror(e));
	return output ? EX_CANTCREAT : EX_NOINPUT;
}

static int
open_flags(unsigned f)
{
	return (f & FLAG_APPEND ? O_APPEND : 0) | (f & FLAG_DIRECT ? O_DIRECT : 0) |
	       (f & FLAG_DIRECTORY ? O_DIRECTORY : 0) |
	       (f & FLAG_DSYNC ? O_DSYNC : 0) | (f & FLAG_SYNC ? O_SYNC : 0) |
	       (f & FLAG_NONBLOCK ? O_NONBLOCK : 0) |
	       (f & FLAG_NOATIME ? O_NOATIME : 0) | (f & FLAG_NOFOLLOW ? O_NOFOLLOW : 0) |
	       O_NOCTTY;
}

/* Standard input or output: GNU dd's set_fd_flags, fcntl(2) with the
 * open flags (directory checked by fstat, as fcntl cannot). */
static int
set_std_flags(struct endpoint *ep, bool output)
{
	int want = open_flags(ep->flags) & ~(O_NOCTTY | O_NOFOLLOW);
	int cur, e = 0;
	struct stat st;

	if (want == 0)
		return 0;
	cur = fcntl(ep->fd, F_GETFL);
	if (cur < 0) {
		e = errno;
	} else if ((cur | want) != cur) {
		if (want & O_DIRECTORY) {
			if (fstat(ep->fd, &st) != 0)
				e = errno;
			else if (!S_ISDIR(st.st_mode))
				e = ENOTDIR;
			want &= ~O_DIRECTORY;
		}
		if (e == 0 && (cur | want) != cur &&
		    fcntl(ep->fd, F_SETFL, cur | want) < 0)
			e = errno;
	}
	if (e != 0) {
		fprintf(stderr, "clio dd: setting flags for %s: %s\n",
			dd_quoteaf(ep->name), strerror(e));
		return output ? EX_CANTCREAT : EX_NOINPUT;
	}
	return 0;
}

static void
describe_fd(struct endpoint *ep)
{
	struct stat st;

	bool known = fstat(ep->fd, &st) == 0;

	ep->regular = known && S_ISREG(st.st_mode);
	ep->seekable = lseek(ep->fd, 0, SEEK_CUR) >= 0;
	/* no wait for these to be ready: the memory devices of major 1
	 * (null, zero, full, random, urandom) never block */
	ep->never_blocks = known && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) ||
				     (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1));
}

/* The device string for iflag/oflag=direct: a plain path or file: device
 * is opened with O_DIRECT too. */
static char *
device_string(const struct endpoint *ep)
{
	const char *s = ep->spec;
	char *out = NULL;

	if (!(ep->flags & FLAG_DIRECT))
		return strdup(s);
	if (strncmp(s, "file:", 5) == 0 && strstr(s, "direct=") == NULL) {
		if (asprintf(&out, "%s%cdirect=1", s, strchr(s, '?') ? '&' : '?') < 0)
			return NULL;
		return out;
	}
	if (is_plain_path(s) && strchr(s, '?') == NULL) {
		if (asprintf(&out, "file:%s?direct=1", s) < 0)
			return NULL;
		return out;
	}
	return strdup(s);
}

/* if= and of= name one regular file or block device. */
static bool
same_inode(const struct dd *dd)
{
	const struct endpoint *a = &dd->in, *b = &dd->out;
	struct stat sa, sb;

	if (a->spec == NULL || b->spec == NULL || !is_plain_path(a->spec) ||
	    !is_plain_path(b->spec) || strncmp(a->spec, "file:", 5) == 0 ||
	    strncmp(b->spec, "file:", 5) == 0 || strcmp(a->spec, "/dev/zero") == 0 ||
	    stat(a->spec, &sa) < 0 || stat(b->spec, &sb) < 0)
		return false;
	if (S_ISREG(sa.st_mode) && S_ISREG(sb.st_mode))
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode) && sa.st_rdev == sb.st_rdev;
}

/* The same file at both ends, both through the cache: GNU dd's reads
 * then see its writes (and its truncation), so both ends get one clio
 * device. */
static bool
same_file(const struct dd *dd)
{
	return !((dd->in.flags | dd->out.flags) & (FLAG_DIRECT | FLAG_DIRECTORY)) &&
	       same_inode(dd);
}

/* if= and of= are two device strings (nfs://, file:...) that turned out,
 * once both are open, to be one file: the same version (inode or fileid,
 * size and times).  Taken for two devices, as with direct: the input is
 * opened again after the output's truncation (harmless if they differ). */
static bool
same_version(const struct dd *dd)
{
	struct clio_validator a, b;

	if (dd->same_file || dd->in.kind != EP_CLIO || dd->out.kind != EP_CLIO ||
	    (is_plain_path(dd->in.spec) && is_plain_path(dd->out.spec)) ||
	    ((dd->in.flags | dd->out.flags) & FLAG_DIRECTORY) ||
	    clio_dev_version(dd->in.dev, &a) != 0 || clio_dev_version(dd->out.dev, &b) != 0)
		return false;
	return a.id != 0 && a.id == b.id && a.size == b.size && a.mtime_ns == b.mtime_ns &&
	       a.ctime_ns == b.ctime_ns && a.change == b.change;
}

/* The output device's open flags: conv=nocreat and conv=excl hold for a
 * device string too (file:, nfs:); a plain path was created above. */
static int
output_flags(const struct dd *dd, const struct endpoint *ep)
{
	if (dd->conv & CONV_NOCREAT)
		return 0;
	if ((dd->conv & CONV_EXCL) && !is_plain_path(ep->spec))
		return CLIO_DEV_CREATE | CLIO_DEV_EXCL;
	return CLIO_DEV_CREATE;
}

/* An output that may be written but not read (mode 0200), which the
 * cache cannot take: as GNU dd, a file descriptor opened O_WRONLY,
 * truncated at seek= unless conv=notrunc. */
static int
open_write_only(struct dd *dd, struct endpoint *ep)
{
	ep->fd = open(ep->spec, O_WRONLY | O_CLOEXEC | open_flags(ep->flags));
	if (ep->fd < 0)
		return open_error(ep, errno, true);
	ep->kind = EP_FD;
	describe_fd(ep);
	if (!(dd->conv & CONV_NOTRUNC) && dd->seek != DD_OFF_OVERFLOW &&
	    ftruncate(ep->fd, (off_t)dd->seek) < 0) {
		fprintf(stderr, "clio dd: failed to truncate to %llu bytes in output "
				"file %s: %s\n",
			(unsigned long long)dd->seek, dd_quoteaf(ep->name), strerror(errno));
		return EX_IOERR;
	}
	return 0;
}

static int
open_endpoint(struct dd *dd, struct endpoint *ep, bool output)
{
	char err[ERRLEN];
	struct stat st;
	char *spec;
	int r, mode = output ? O_WRONLY : O_RDONLY;

	if (ep->spec == NULL) {
		ep->kind = EP_FD;
		ep->fd = output ? 1 : 0;
		describe_fd(ep);
		return set_std_flags(ep, output);
	}
	if (ep->spec[0] == '\0') /* GNU dd's open("") */
		return open_error(ep, ENOENT, output);
	/* with direct, GNU dd's open of /dev/zero fails (EINVAL) */
	if (!output && strcmp(ep->spec, "/dev/zero") == 0 &&
	    !(ep->flags & (FLAG_DIRECTORY | FLAG_NONBLOCK | FLAG_DIRECT))) {
		ep->kind = EP_ZERO;
		return 0;
	}
	if (is_fd_path(ep->spec, &st) || (ep->flags & FLAG_DIRECTORY)) {
		ep->kind = EP_FD;
		ep->fd = open(ep->spec, mode | open_flags(ep->flags) | O_CLOEXEC |
						(output && !(dd->conv & CONV_NOCREAT) ? O_CREAT : 0) |
						(output && (dd->conv & CONV_EXCL) ? O_EXCL : 0),
			      0666);
		if (ep->fd < 0)
			return open_error(ep, errno, output);
		describe_fd(ep);
		return 0;
	}
	/* open(2)'s O_NOFOLLOW for an input that a backend opens (an
	 * output is created below with it, and says its own errno) */
	if (!output && (ep->flags & FLAG_NOFOLLOW) && lstat(ep->spec, &st) == 0 &&
	    S_ISLNK(st.st_mode))
		return open_error(ep, ELOOP, output);
	ep->kind = EP_CLIO;
	if (output && is_plain_path(ep->spec)) {
		/* create it as GNU dd does: mode 0666 less the umask, excl */
		int fd = open(ep->spec,
			      O_WRONLY | O_NOCTTY | O_CLOEXEC |
				      (dd->conv & CONV_NOCREAT ? 0 : O_CREAT) |
				      (dd->conv & CONV_EXCL ? O_EXCL : 0) |
				      (ep->flags & FLAG_NOFOLLOW ? O_NOFOLLOW : 0),
			      0666);
		if (fd < 0)
			return open_error(ep, errno, output);
		close(fd);
	}
	if (is_plain_path(ep->spec) && stat(ep->spec, &st) == 0)
		ep->blockdev = S_ISBLK(st.st_mode);
	if (output && dd->same_file) {
		/* one device for both ends: the cache keeps them coherent */
		ep->dev = dd->in.dev;
		goto opened;
	}
	spec = device_string(ep);
	if (spec == NULL)
		return open_error(ep, ENOMEM, output);
	r = -EINVAL;
	if (!output && dd->same_file &&
	    clio_dev_open_err(spec, 0, &ep->dev, err, sizeof(err)) == 0)
		r = 0;
	else if (!output)
		dd->same_file = false; /* not writable: the output's open says why */
	if (r != 0)
		r = clio_dev_open_err(spec, output ? output_flags(dd, ep) : CLIO_DEV_RDONLY,
				      &ep->dev, err, sizeof(err));
	free(spec);
	if (r == -EACCES && output && is_plain_path(ep->spec) &&
	    !(ep->flags & FLAG_DIRECT))
		return open_write_only(dd, ep);
	if (r < 0) {
		/* the file backend's message repeats the path: say the errno */
		if (r != -EINVAL && err[0] && !is_plain_path(ep->spec)) {
			/* a device string: the backend's reason says more */
			fprintf(stderr, "clio dd: failed to open '%s': %s\n", ep->name,
				cli_reason(err, ep->spec));
			return output ? EX_CANTCREAT : EX_NOINPUT;
		}
		if (r != -EINVAL || strstr(err, strerror(EINVAL)) != NULL || !err[0])
			return open_error(ep, -r, output);
		fprintf(stderr, "clio dd: failed to open '%s': %s\n", ep->name, err);
		return EX_USAGE;
	}
opened:
	if (clio_dev_sector_size(ep->dev) > dd->conf.bsize) {
		/* the cache's blocks would be refused (an NBD server's
		 * minimum block size above bsize) */
		fprintf(stderr, "clio dd: bsize %u is below the sector size %u of '%s' "
				"(give --bsize=%u or more)\n",
			dd->conf.bsize, clio_dev_sector_size(ep->dev), ep->name,
			clio_dev_sector_size(ep->dev));
		return EX_USAGE;
	}
	r = clio_open(dd->cache, ep->dev,
		      (output ? CLIO_RDWR : CLIO_RDONLY) |
			      (ep->flags & FLAG_DIRECT ? CLIO_DIRECT : 0),
		      &ep->file);
	if (r < 0)
		return open_error(ep, -r, output);
	if ((ep->flags & FLAG_DIRECT) && clio_dev_sector_size(ep->dev) > SECTOR &&
	    ((output ? dd->obs : dd->ibs) | (output ? dd->seek : dd->skip)) %
			    clio_dev_sector_size(ep->dev)) {
		fprintf(stderr, "clio dd: %s=%llu cannot go to '%s' with %s=direct: "
				"not a multiple of its %u-byte sectors\n",
			output ? "obs" : "ibs",
			(unsigned long long)(output ? dd->obs : dd->ibs), ep->name,
			output ? "oflag" : "iflag", clio_dev_sector_size(ep->dev));
		return EX_USAGE;
	}
	return 0;
}

/* ------------------------------------------------------------ reading */

/* GNU dd's warning for a short read followed by another read. */
static bool warn_partial;
static ssize_t prev_nread;

static ssize_t
read_fd(struct dd *dd, char *buf, size_t len)
{
	struct endpoint *ep = &dd->in;

	for (;;) {
		ssize_t r;

		if (!(ep->flags & FLAG_NONBLOCK) && !ep->never_blocks &&
		    dd_wait_fd(dd, ep->fd, false) < 0)
			return -EINTR;
		r = read(ep->fd, buf, len);
		if (r >= 0)
			return r;
		if (errno != EINTR)
			return -errno;
	}
}

static ssize_t
read_once(struct dd *dd, char *buf, size_t len)
{
	struct endpoint *ep = &dd->in;
	ssize_t n;

	len = MIN(len, MAX_READ);
	switch (ep->kind) {
	case EP_ZERO:
		memset(buf, 0, len);
		n = (ssize_t)len;
		break;
	case EP_CLIO:
		n = clio_pread(ep->file, buf, len, ep->off);
		break;
	default:
		n = read_fd(dd, buf, len);
	}
	if (n > 0) {
		ep->off += (uint64_t)n;
		if (warn_partial && prev_nread > 0 && (size_t)prev_nread < len) {
			if (dd->status != ST_NONE)
				fprintf(stderr, "clio dd: warning: partial read (%zd byte%s); "
						"suggest iflag=fullblock\n",
					prev_nread, prev_nread == 1 ? "" : "s");
			warn_partial = false;
		}
	}
	prev_nread = n;
	return n;
}

/* One input block: one read, or with iflag=fullblock as many as fill it.
 * A signal returns what was read before it (-EINTR if nothing). */
static ssize_t
read_block(struct dd *dd, char *buf, size_t len)
{
	size_t done = 0;

	if (!(dd->in.flags & FLAG_FULLBLOCK))
		return read_once(dd, buf, len);
	while (done < len) {
		ssize_t n = read_once(dd, buf + done, len - done);
		if (n < 0)
			return done > 0 && n == -EINTR ? (ssize_t)done : n;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static void
read_error(struct dd *dd, int e)
{
	fprintf(stderr, "clio dd: error reading %s: %s\n", dd_quoteaf(dd->in.name),
		strerror(e));
}

/* The errno of lseek(2) to off on a regular file that a backend holds
 * (EINVAL past the file system's largest file), 0 if it would do. */
static int
lseek_errno(const struct endpoint *ep, uint64_t off, bool output)
{
	int fd, e = 0;

	if (!is_plain_path(ep->spec) || ep->blockdev ||
	    (fd = open(ep->spec, (output ? O_WRONLY : O_RDONLY) | O_CLOEXEC)) < 0)
		return 0;
	if (lseek(fd, (off_t)off, SEEK_SET) < 0)
		e = errno;
	close(fd);
	return e;
}

/* skip=: seek where the input can, else read and discard. */
static int
skip_input(struct dd *dd, char *buf)
{
	struct endpoint *ep = &dd->in;
	uint64_t records = dd->skip / dd->ibs, rest = dd->skip % dd->ibs;
	uint64_t got = 0;
	struct stat st;
	int e;

	if (dd->skip == DD_OFF_OVERFLOW && (ep->kind != EP_FD || ep->seekable)) {
		fprintf(stderr, "clio dd: %s: cannot skip: %s\n",
			dd_quotef(ep->name), strerror(EOVERFLOW));
		dd->quit = true;
		return EX_IOERR;
	}
	if (dd->skip == 0 || ep->kind == EP_ZERO)
		return 0;
	if (ep->kind == EP_CLIO) {
		int64_t size = clio_fsize(ep->file);
		ep->off = dd->skip;
		if (size >= 0 && (uint64_t)size < dd->skip && ep->blockdev) {
			/* GNU dd: lseek(2) past a block device's end fails */
			fprintf(stderr, "clio dd: %s: cannot skip: %s\n",
				dd_quotef(ep->name), strerror(EINVAL));
			dd->quit = true;
			return EX_IOERR;
		}
		if (size >= 0 && (uint64_t)size < dd->skip &&
		    (e = lseek_errno(ep, dd->skip, false)) != 0)
			goto cannot_skip;
		if (size >= 0 && (uint64_t)size < dd->skip) {
			ep->off = (uint64_t)size;
			goto short_skip;
		}
		return 0;
	}
	if (ep->seekable) {
		off_t at = lseek(ep->fd, (off_t)dd->skip, SEEK_CUR);
		if (at >= 0) {
			if (ep->regular && fstat(ep->fd, &st) == 0 && at > st.st_size)
				goto short_skip;
			return 0;
		}
		/* GNU dd: a file with an end refuses the offset */
		e = errno;
		if (lseek(ep->fd, 0, SEEK_END) >= 0)
			goto cannot_skip;
	}
	while (records > 0 || rest > 0) {
		ssize_t n = read_block(dd, buf, records ? dd->ibs : rest);
		if (n == -EINTR)
			return 0;
		if (n < 0) {
			read_error(dd, (int)-n);
			dd->quit = true;
			return EX_IOERR;
		}
		if (n == 0)
			break;
		got += (uint64_t)n;
		if (records)
			records--;
		else
			rest = 0;
	}
	if (records == 0 && rest == 0 && got == dd->skip)
		return 0;
	goto short_skip;
cannot_skip:
	fprintf(stderr, "clio dd: %s: cannot skip: %s\n", dd_quotef(ep->name),
		strerror(e));
	dd->quit = true;
	return EX_IOERR;
short_skip:
	if (dd->status != ST_NONE)
		fprintf(stderr, "clio dd: %s: cannot skip to specified offset\n",
			dd_quotef(ep->name));
	return 0;
}

/* ------------------------------------------------------------ writing */

static bool last_was_seek;
/* the bytes of the last short write (write_block's -ENOSPC) */
static size_t short_written;

static bool
all_zero(const char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static ssize_t
write_fd(struct dd *dd, const char *buf, size_t len)
{
	struct endpoint *ep = &dd->out;
	size_t done = 0;

	while (done < len) {
		ssize_t r;

		if (!ep->never_blocks && dd_wait_fd(dd, ep->fd, true) < 0)
			return done > 0 ? (ssize_t)done : -EINTR;
		r = write(ep->fd, buf + done, len - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return done > 0 ? (ssize_t)done : -errno;
		if (r == 0)
			return done > 0 ? (ssize_t)done : -ENOSPC;
		done += (size_t)r;
	}
	if (ep->spec == NULL && ep->regular && (ep->flags & (FLAG_DSYNC | FLAG_SYNC)))
		(void)(ep->flags & FLAG_SYNC ? fsync(ep->fd) : fdatasync(ep->fd));
	return (ssize_t)done;
}

/* A write-back error taken early (check_writeback), owed to the user at
 * conv=fsync or the close; the one that ended the copy, said once. */
static int out_err, stop_err;

/* Once a MiB: a write-back that failed for want of space (a full file
 * system) ends the copy, as the kernel's write does for GNU dd; another
 * error waits for conv=fsync or the close.  Only failures new since the
 * last look count: the failed blocks that clio_writeback tries again
 * here, and that fail again, are not tried once more every MiB. */
static int
check_writeback(struct dd *dd)
{
	static uint64_t next_check = 1 << 20, errors_seen;
	struct endpoint *ep = &dd->out;
	struct clio_cache_stats cs;
	int r;

	if (ep->off < next_check)
		return 0;
	next_check = ep->off + (1 << 20);
	clio_cache_stats(dd->cache, &cs);
	if (cs.write_errors == errors_seen)
		return 0;
	r = clio_writeback(ep->file);
	clio_cache_stats(dd->cache, &cs);
	errors_seen = cs.write_errors;
	if (r == -ENOSPC || r == -EDQUOT || r == -EFBIG)
		return stop_err = r;
	if (out_err == 0)
		out_err = r;
	return 0;
}

/* A write across the largest file the output takes (clio_pwrite refuses
 * it whole, changing nothing): as write(2) does for GNU dd, the bytes
 * up to the limit, found by halving, or -EFBIG when none fit. */
static ssize_t
write_to_limit(clio_file *f, const char *buf, size_t len, uint64_t off)
{
	size_t fits = 0, fails = len;

	while (fails - fits > 1) {
		size_t mid = fits + (fails - fits) / 2;
		ssize_t w = clio_pwrite(f, buf, mid, off);

		if (w == (ssize_t)mid)
			fits = mid;
		else if (w == -EFBIG)
			fails = mid;
		else
			return w < 0 ? w : (ssize_t)fits;
	}
	return fits > 0 ? (ssize_t)fits : -EFBIG;
}

static ssize_t
write_clio(struct dd *dd, const char *buf, size_t len)
{
	struct endpoint *ep = &dd->out;
	ssize_t w;
	int64_t size;
	int r;

	/* O_APPEND: every write lands at the end, also after a sparse hole */
	if ((ep->flags & FLAG_APPEND) && (size = clio_fsize(ep->file)) >= 0)
		ep->off = (uint64_t)size;
	/* GNU dd turns O_DIRECT off for good at a partial block: from the
	 * first write the direct path cannot take on, use the cache; a full
	 * block at an unaligned end (append) fails as O_DIRECT does */
	if ((ep->flags & FLAG_DIRECT) && ep->tail == NULL && len == dd->obs &&
	    ep->off % clio_dev_sector_size(ep->dev) != 0)
		return -EINVAL;
	if ((ep->flags & FLAG_DIRECT) && ep->tail == NULL &&
	    (ep->off | len) % clio_dev_sector_size(ep->dev) != 0) {
		r = clio_open(dd->cache, ep->dev, CLIO_RDWR, &ep->tail);
		if (r < 0)
			return r;
	}
	w = clio_pwrite(ep->tail ? ep->tail : ep->file, buf, len, ep->off);
	if (w == -EFBIG)
		w = write_to_limit(ep->tail ? ep->tail : ep->file, buf, len, ep->off);
	if (w > 0 && (r = check_writeback(dd)) < 0)
		return r;
	if (w > 0 && (ep->flags & (FLAG_DSYNC | FLAG_SYNC))) {
		r = clio_fsync(ep->tail ? ep->tail : ep->file);
		if (r < 0)
			return r;
	}
	return w;
}

/* Write one output block at the output's offset; 0 or -errno, with
 * dd->bytes counting what was written. */
static int
write_block(struct dd *dd, const char *buf, size_t len, bool full)
{
	struct endpoint *ep = &dd->out;
	ssize_t w;

	last_was_seek = false;
	short_written = 0;
	if (ep->kind == EP_FD && (ep->flags & FLAG_DIRECT) && len < dd->obs) {
		/* as GNU dd: O_DIRECT off for a short block, then conv=fsync */
		int fl = fcntl(ep->fd, F_GETFL);
		if (fl >= 0 && fcntl(ep->fd, F_SETFL, fl & ~O_DIRECT) < 0)
			fprintf(stderr, "clio dd: failed to turn off O_DIRECT: %s\n",
				ep->name);
		dd->conv |= CONV_FSYNC;
	}
	if ((dd->conv & CONV_SPARSE) && all_zero(buf, len)) {
		if (ep->kind == EP_CLIO) {
			w = (ssize_t)len;
			last_was_seek = true;
			goto done;
		}
		if (ep->seekable && lseek(ep->fd, (off_t)len, SEEK_CUR) >= 0) {
			w = (ssize_t)len;
			last_was_seek = true;
			goto done;
		}
		dd->conv &= ~(unsigned)CONV_SPARSE;
	}
	/* as GNU's full_write: after a short write the rest again, whose
	 * error (EFBIG at the largest file, ENOSPC) is the one said */
	for (size_t put = 0; put < len; put += (size_t)w) {
		w = ep->kind == EP_CLIO ? write_clio(dd, buf + put, len - put)
					: write_fd(dd, buf + put, len - put);
		if (w <= 0) {
			short_written = put;
			return w < 0 ? (int)w : -ENOSPC;
		}
		ep->off += (uint64_t)w;
		dd->bytes += (uint64_t)w;
	}
	goto counted;
done:
	ep->off += (uint64_t)w;
	dd->bytes += (uint64_t)w;
counted:
	if (full)
		dd->full_out++;
	else
		dd->part_out++;
	return 0;
}

/* GNU's words: "writing to" for a gathered obs block, "error writing"
 * for a block written as read and the last, partial, obs block. */
static void
write_error(struct dd *dd, int e, bool gathered)
{
	if (gathered)
		dd->quit = true; /* GNU's write_output quits */
	if (e == EPIPE && dd_signal_poll(dd) == SIGPIPE)
		return; /* the signal says it */
	if (e == EINTR)
		return;
	fprintf(stderr, gathered ? "clio dd: writing to %s: %s\n"
				 : "clio dd: error writing %s: %s\n",
		dd_quoteaf(dd->out.name), strerror(e));
}

static bool trunc_failed;

/* seek=, before skip= as GNU dd truncates at its open: truncate the
 * output there unless conv=notrunc. */
static int
truncate_output(struct dd *dd)
{
	struct endpoint *ep = &dd->out;
	int r;

	if (ep->kind == EP_CLIO) {
		int64_t size = clio_fsize(ep->file);
		if (!(dd->conv & CONV_NOTRUNC) && size >= 0 &&
		    (uint64_t)size != dd->seek) {
			r = clio_ftruncate(ep->file, dd->seek);
			if (r < 0 && r != -EINVAL && r != -ENOTSUP) {
				/* GNU dd goes on to the seek, and fails at the end */
				fprintf(stderr, "clio dd: failed to truncate to %llu bytes "
						"in output file %s: %s\n",
					(unsigned long long)dd->seek, dd_quoteaf(ep->name),
					strerror(-r));
				trunc_failed = true;
			}
		}
		ep->off = dd->seek;
		if (ep->flags & FLAG_APPEND) {
			size = clio_fsize(ep->file);
			ep->off = size > 0 ? (uint64_t)size : 0;
		}
	}
	return 0;
}

/* seek=, after skip=: position the output (an error here is one GNU dd
 * quits on). */
static int
seek_output(struct dd *dd)
{
	struct endpoint *ep = &dd->out;
	int e = 0;

	if (dd->seek == DD_OFF_OVERFLOW && (ep->kind != EP_FD || ep->seekable)) {
		fprintf(stderr, "clio dd: %s: cannot seek: %s\n",
			dd_quotef(ep->name), strerror(EOVERFLOW));
		dd->quit = true;
		return EX_IOERR;
	}
	if (ep->kind == EP_CLIO) {
		int64_t size = clio_fsize(ep->file);
		if (size < 0 || dd->seek <= (uint64_t)size ||
		    (!ep->blockdev && (e = lseek_errno(ep, dd->seek, true)) == 0))
			return 0;
		fprintf(stderr, "clio dd: %s: cannot seek: %s\n",
			dd_quotef(ep->name), strerror(ep->blockdev ? EINVAL : e));
		dd->quit = true;
		return EX_IOERR;
	}
	if (dd->seek == 0)
		return 0;
	/* a file descriptor is not truncated (GNU dd leaves standard output) */
	if (ep->seekable && lseek(ep->fd, (off_t)dd->seek, SEEK_CUR) >= 0)
		return 0;
	fprintf(stderr, "clio dd: %s: cannot seek: %s\n",
		dd_quotef(ep->name), strerror(ep->seekable ? errno : ESPIPE));
	dd->quit = true;
	return EX_IOERR;
}

/* ------------------------------------------------------------ the copy */

struct bufs {
	char *ibuf, *obuf;
	size_t opos;
	int werr;
	bool gathered;	/* werr from a full obs block */
};
static struct bufs bufs;

/* A sparse end on a regular file descriptor: as GNU dd, extend it to
 * the offset, never shorten it. */
static int
extend_fd(int fd)
{
	struct stat st;
	off_t off = lseek(fd, 0, SEEK_CUR);

	if (off < 0 || fstat(fd, &st) < 0 || st.st_size >= off)
		return 0;
	return ftruncate(fd, off) < 0 ? -errno : 0;
}

/* conv's output: gathered into obs-sized blocks */
static int
emit_out(struct dd *dd, const char *p, size_t n)
{
	while (n > 0) {
		size_t k = MIN(dd->obs - bufs.opos, n);
		memcpy(bufs.obuf + bufs.opos, p, k);
		bufs.opos += k;
		p += k;
		n -= k;
		if (bufs.opos == dd->obs) {
			int r = write_block(dd, bufs.obuf, bufs.opos, true);
			bufs.opos = 0;
			if (r < 0) {
				/* a short write counts as a partial record */
				if (short_written > 0)
					dd->part_out++;
				bufs.gathered = true;
				return bufs.werr = r;
			}
		}
	}
	return 0;
}

/* A block buffer: page-aligned (O_DIRECT takes it); from 2 MiB up in
 * transparent huge pages where the kernel gives them, so that the first
 * touch of a big buffer costs one fault per 2 MiB, not one per page. */
static int
alloc_block_buffer(char **p, size_t len)
{
	size_t huge = 2u << 20;

	if (len < huge)
		return posix_memalign((void **)p, 4096, len);
	if (posix_memalign((void **)p, huge, len) != 0)
		return -1;
	(void)madvise(*p, len / huge * huge, MADV_HUGEPAGE);
	return 0;
}

static int
alloc_buffers(struct dd *dd)
{
	char si[32];

	if (alloc_block_buffer(&bufs.ibuf, dd->ibs) != 0) {
		dd_human(si, sizeof(si), dd->ibs, false);
		fprintf(stderr, "clio dd: memory exhausted by input buffer of size "
				"%llu bytes (%s)\n", (unsigned long long)dd->ibs, si);
		return EX_OSERR;
	}
	if ((dd->conv & CONV_TWOBUFS) &&
	    alloc_block_buffer(&bufs.obuf, dd->obs) != 0) {
		dd_human(si, sizeof(si), dd->obs, false);
		fprintf(stderr, "clio dd: memory exhausted by output buffer of size "
				"%llu bytes (%s)\n", (unsigned long long)dd->obs, si);
		free(bufs.ibuf);
		return EX_OSERR;
	}
	return 0;
}

/* After a read error with conv=noerror: past the bad block if we can. */
static void
skip_bad_block(struct dd *dd, size_t bad)
{
	struct endpoint *ep = &dd->in;

	if (ep->kind == EP_CLIO)
		ep->off += bad;
	else if (ep->kind == EP_FD && ep->seekable)
		(void)lseek(ep->fd, (off_t)bad, SEEK_CUR);
}

static int
copy(struct dd *dd)
{
	const char pad = dd->conv & (CONV_BLOCK | CONV_UNBLOCK) ? ' ' : '\0';
	uint64_t records = 0;
	size_t partread = 0;
	int rc = 0, r;

	warn_partial = !(dd->conv & CONV_TWOBUFS) && !(dd->in.flags & FLAG_FULLBLOCK) &&
		       (dd->skip >= dd->ibs || (dd->have_count && dd->max_records > 0) ||
			((dd->in.flags | dd->out.flags) & FLAG_DIRECT));
	/* GNU dd's order: the input is skipped before the output is sought */
	if ((rc = skip_input(dd, bufs.ibuf)) != 0 || (rc = seek_output(dd)) != 0)
		return rc;
	if (dd->have_count && dd->max_records == 0 && dd->max_bytes == 0)
		return 0;
	dd_conv_setup(dd);
	for (;;) {
		size_t want = dd->ibs;
		ssize_t n;

		if (dd_signal_check(dd) != 0)
			break;
		dd_progress(dd);
		dd_iostat_tick(dd, false);
		if (dd->have_count && records >= dd->max_records + (dd->max_bytes != 0))
			break;
		if (dd->have_count && records >= dd->max_records)
			want = dd->max_bytes;
		if ((dd->conv & CONV_SYNC) && (dd->conv & CONV_NOERROR))
			memset(bufs.ibuf, pad, dd->ibs);
		n = read_block(dd, bufs.ibuf, want);
		if (n == -EINTR && dd_signal_pending())
			break;
		if (n == 0)
			break;
		if (n < 0) {
			if (!(dd->conv & CONV_NOERROR) || dd->status != ST_NONE)
				read_error(dd, (int)-n);
			if (!(dd->conv & CONV_NOERROR)) {
				rc = n == -EISDIR ? EX_NOINPUT : EX_IOERR;
				break;
			}
			dd_print_stats(dd);
			skip_bad_block(dd, dd->ibs - partread);
			if (!(dd->conv & CONV_SYNC) || partread)
				continue;
			n = 0;
		}
		records++;
		if ((size_t)n < dd->ibs) {
			dd->part_in++;
			partread = (size_t)n;
			if (dd->conv & CONV_SYNC) {
				if (!(dd->conv & CONV_NOERROR))
					memset(bufs.ibuf + n, pad, dd->ibs - (size_t)n);
				n = (ssize_t)dd->ibs;
			}
		} else {
			dd->full_in++;
			partread = 0;
		}
		if (!(dd->conv & CONV_TWOBUFS)) {
			/* bs= and no conversion: each block is written as read */
			r = write_block(dd, bufs.ibuf, (size_t)n, (size_t)n == dd->obs);
			if (r < 0) {
				write_error(dd, -r, false);
				return EX_IOERR;
			}
			continue;
		}
		if (dd_convert(dd, bufs.ibuf, (size_t)n, emit_out) != 0)
			break;
	}
	if (dd->conv & CONV_TWOBUFS) {
		if (bufs.werr == 0)
			dd_conv_finish(dd, emit_out);
		if (bufs.werr == 0 && bufs.opos > 0) {
			r = write_block(dd, bufs.obuf, bufs.opos, false);
			bufs.opos = 0;
			if (r < 0) {
				if (short_written > 0)
					dd->part_out++;
				bufs.werr = r;
			}
		}
		if (bufs.werr != 0) {
			write_error(dd, -bufs.werr, bufs.gathered);
			return EX_IOERR;
		}
	}
	/* a sparse end still makes the file as long as the copy */
	if (last_was_seek) {
		struct endpoint *ep = &dd->out;
		if (ep->kind == EP_CLIO && clio_fsize(ep->file) < (int64_t)ep->off)
			r = clio_ftruncate(ep->file, ep->off);
		else if (ep->kind == EP_FD && ep->regular)
			r = extend_fd(ep->fd);
		else
			r = 0;
		if (r < 0) {
			fprintf(stderr, "clio dd: failed to truncate '%s': %s\n", ep->name,
				strerror(-r));
			return EX_IOERR;
		}
	}
	return rc;
}

/* conv=fsync, fdatasync: what the cache holds reaches storage. */
static int
sync_output(struct dd *dd)
{
	struct endpoint *ep = &dd->out;
	int r;

	if (!(dd->conv & (CONV_FSYNC | CONV_FDATASYNC)))
		return 0;
	if (ep->kind == EP_CLIO) {
		r = clio_fsync(ep->tail ? ep->tail : ep->file);
		if (r == 0 && ep->tail)
			r = clio_fsync(ep->file);
		if (r == 0)
			r = out_err;
		out_err = 0;
		if (r < 0 && r != stop_err) {
			fprintf(stderr, "clio dd: %s failed for %s: %s\n",
				dd->conv & CONV_FSYNC ? "fsync" : "fdatasync", dd_quoteaf(ep->name),
				strerror(-r));
			return EX_IOERR;
		}
		return 0;
	}
	if (!(dd->conv & CONV_FSYNC) && fdatasync(ep->fd) == 0)
		return 0;
	if (!(dd->conv & CONV_FSYNC) && errno != ENOSYS && errno != EINVAL)
		fprintf(stderr, "clio dd: fdatasync failed for %s: %s\n",
			dd_quoteaf(ep->name), strerror(errno));
	if (fsync(ep->fd) < 0) {
		fprintf(stderr, "clio dd: fsync failed for %s: %s\n",
			dd_quoteaf(ep->name), strerror(errno));
		return EX_IOERR;
	}
	return 0;
}

/* Close the clio handles (the devices stay open for the statistics);
 * returns EX_IOERR if the output's write-back failed. */
static int
close_files(struct dd *dd)
{
	struct endpoint *out = &dd->out;
	clio_file **fs[2] = { &out->tail, &out->file };
	int i, r, rc = 0;

	if (dd->in.file != NULL) {
		(void)clio_close(dd->in.file);
		dd->in.file = NULL;
	}
	/* the tail handle first: the last handle writes back */
	for (i = 0; i < 2; i++) {
		if (*fs[i] == NULL)
			continue;
		r = clio_close(*fs[i]);
		*fs[i] = NULL;
		if (i == 1 && r == 0)
			r = out_err;
		if (i == 1)
			out_err = 0;
		if (r == stop_err)
			r = 0;
		if (r < 0 && rc == 0) {
			fprintf(stderr, "clio dd: error closing '%s': %s\n", out->name,
				strerror(-r));
			rc = EX_IOERR;
		}
	}
	return rc;
}

/* count=0 with nocache: GNU dd drops the kernel's cache to the end of
 * each such end, which cannot be done on a pipe (a clio device is left,
 * see clio(1)). */
static int
discard_cache(const struct endpoint *ep)
{

	if (!(ep->flags & FLAG_NOCACHE) || ep->kind != EP_FD || ep->seekable)
		return 0;
	fprintf(stderr, "clio dd: failed to discard cache for: %s: %s\n",
		dd_quotef(ep->name), strerror(ESPIPE));
	return EX_IOERR;
}

static int
check_direct(const struct dd *dd)
{
	if ((dd->in.flags & FLAG_DIRECT) &&
	    (dd->ibs % SECTOR || (dd->skip != DD_OFF_OVERFLOW && dd->skip % SECTOR))) {
		fprintf(stderr, "clio dd: %s=%llu cannot be read with iflag=direct: "
				"not a multiple of %d bytes\n",
			dd->ibs % SECTOR ? "ibs" : "skip",
			(unsigned long long)(dd->ibs % SECTOR ? dd->ibs : dd->skip),
			SECTOR);
		return EX_USAGE;
	}
	if ((dd->out.flags & FLAG_DIRECT) &&
	    (dd->obs % SECTOR || (dd->seek != DD_OFF_OVERFLOW && dd->seek % SECTOR))) {
		fprintf(stderr, "clio dd: %s=%llu cannot be written with oflag=direct: "
				"not a multiple of %d bytes\n",
			dd->obs % SECTOR ? "obs" : "seek",
			(unsigned long long)(dd->obs % SECTOR ? dd->obs : dd->seek),
			SECTOR);
		return EX_USAGE;
	}
	return 0;
}

int
cmd_dd(int argc, char **argv)
{
	struct dd dd;
	struct clio_conf defaults = CLIO_CONF_DEFAULTS;
	char err[ERRLEN];
	int r, rc = 0;
	double elapsed;
	bool quit_early, reopen_in;

	/* the locale's character set, for quoting names and operands as
	 * GNU dd does (printable multibyte characters, a UTF-8 locale's
	 * quotation marks) */
	(void)setlocale(LC_CTYPE, "");
	memset(&dd, 0, sizeof(dd));
	dd.conf = defaults;
	dd.ibs = dd.obs = 512;
	r = dd_parse(&dd, argc, argv);
	if (r != 0)
		return r < 0 ? 0 : r;
	dd.in.name = dd.in.spec ? dd.in.spec : "standard input";
	dd.out.name = dd.out.spec ? dd.out.spec : "standard output";
	if (clio_conf_check(&dd.conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio dd: %s\n", err);
		return EX_USAGE;
	}
	if (dd.json && dd.out.spec == NULL) {
		fprintf(stderr, "clio dd: --json needs of= (standard output "
				"carries the JSON)\n");
		return EX_USAGE;
	}
	/* before any device or the cache starts a thread */
	if ((r = dd_signals_block()) < 0) {
		fprintf(stderr, "clio dd: cannot take signals: %s\n", strerror(-r));
		return EX_OSERR;
	}
	if ((r = check_direct(&dd)) != 0 || (r = check_spec(&dd.in)) != 0 ||
	    (r = check_spec(&dd.out)) != 0)
		return r;
	if ((r = alloc_buffers(&dd)) != 0)
		return r;
	clio_dev_set_default_queue_depth(dd.conf.queue_depth);
	r = clio_cache_new(&dd.conf, &dd.cache);
	if (r < 0) {
		fprintf(stderr, "clio dd: cannot create the cache: %s\n", strerror(-r));
		return EX_OSERR;
	}
	dd.same_file = same_file(&dd);
	/* the same file through two devices (direct): the input is opened
	 * again after the output's truncation, which GNU dd's reads see */
	reopen_in = !dd.same_file && !((dd.in.flags | dd.out.flags) & FLAG_DIRECTORY) &&
		    same_inode(&dd);
	if ((rc = open_endpoint(&dd, &dd.in, false)) != 0)
		goto done;
	if (dd.seek == DD_OFF_OVERFLOW && !(dd.conv & CONV_NOTRUNC) && dd.out.spec) {
		/* GNU dd dies here, before it opens the output */
		fprintf(stderr, "clio dd: offset too large: cannot truncate to a length "
				"of seek=%llu (%llu-byte) blocks\n",
			(unsigned long long)dd.seek_arg, (unsigned long long)dd.obs);
		rc = EX_USAGE;
		goto done;
	}
	if ((rc = open_endpoint(&dd, &dd.out, true)) != 0)
		goto done;
	if (!reopen_in && same_version(&dd))
		reopen_in = true;
	if (reopen_in && dd.in.kind == EP_CLIO) {
		if ((rc = truncate_output(&dd)) != 0)
			goto done;
		(void)clio_close(dd.in.file);
		clio_dev_close(dd.in.dev);
		dd.in.file = NULL;
		dd.in.dev = NULL;
		if ((rc = open_endpoint(&dd, &dd.in, false)) != 0)
			goto done;
	}

	dd.is_virtual = (dd.in.kind == EP_CLIO || dd.out.kind == EP_CLIO) &&
			(dd.in.kind != EP_CLIO || clio_dev_is_virtual(dd.in.dev)) &&
			(dd.out.kind != EP_CLIO || clio_dev_is_virtual(dd.out.dev)) &&
			dd.in.spec != NULL && dd.out.spec != NULL;
	if (dd.in.kind == EP_CLIO)
		clio_dev_stats_reset(dd.in.dev);
	if (dd.out.kind == EP_CLIO)
		clio_dev_stats_reset(dd.out.dev);
	dd.t_start = dd_now(&dd);
	dd.next_progress = now_monotonic() + 1.0;
	dd.last_tick = dd.t_start;
	dd.next_tick = dd.t_start + dd.iostat;
	if (dd.iostat > 0)
		dd_iostat_header(&dd);
	rc = truncate_output(&dd);
	if (rc == 0)
		rc = copy(&dd);
	if (rc == 0 && trunc_failed)
		rc = EX_IOERR;
	r = sync_output(&dd);
	if (rc == 0)
		rc = r;
	/* GNU dd quits after such an error: a failed sync there ends it
	 * before the summary */
	quit_early = dd.quit && r != 0;
	if (!dd.quit && dd.have_count && dd.max_records == 0 && dd.max_bytes == 0) {
		if ((r = discard_cache(&dd.in)) != 0 && rc == 0)
			rc = r;
		if ((r = discard_cache(&dd.out)) != 0 && rc == 0)
			rc = r;
	}
	/* like dd, close before the summary: it then counts the write-back
	 * at close, and an error there is not printed after a success */
	r = close_files(&dd);
	if (rc == 0)
		rc = r;
	dd_iostat_tick(&dd, true);
	elapsed = dd_now(&dd) - dd.t_start;
	if (!quit_early)
		dd_report(&dd, elapsed);

done:
	r = close_files(&dd);
	if (rc == 0)
		rc = r;
	/* the output's disk cache (writeback) writes back at the device's
	 * close: an error there is the copy's too */
	r = dd.in.dev ? clio_dev_close(dd.in.dev) : 0;
	if (dd.out.dev && dd.out.dev != dd.in.dev)
		r = clio_dev_close(dd.out.dev);
	if (r < 0 && dd.out.dev != NULL) {
		fprintf(stderr, "clio dd: error closing '%s': %s\n", dd.out.name,
			strerror(-r));
		if (rc == 0)
			rc = EX_IOERR;
	}
	if (dd.in.kind == EP_FD && dd.in.spec)
		close(dd.in.fd);
	if (dd.out.kind == EP_FD && dd.out.spec)
		close(dd.out.fd);
	clio_cache_free(dd.cache);
	free(bufs.ibuf);
	free(bufs.obuf);
	fflush(stdout);
	fflush(stderr);
	dd_signal_die(dd_signal_poll(&dd));
	return rc;
}
