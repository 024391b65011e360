/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fsprobe - for tests/test-mount-posix.sh: a fixed list of file system
 * operations in an empty directory, each printed as one line "NAME:
 * RESULT" (an errno's name, or what was read back: sizes, link counts,
 * whether a time moved, data digests), so that a run on a local
 * directory and one through a mount can be compared with diff.
 *   fsprobe DIR [xattr]      xattr: also the extended attribute calls
 * Exit status 0 unless DIR cannot be used.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static int dfd;

static const char *
ename(int e)
{
	static char buf[32];

	switch (e) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	case EACCES: return "EACCES";
	case EEXIST: return "EEXIST";
	case EXDEV: return "EXDEV";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case EFBIG: return "EFBIG";
	case ENOSPC: return "ENOSPC";
	case ENXIO: return "ENXIO";
	case ELOOP: return "ELOOP";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ENOTEMPTY: return "ENOTEMPTY";
	case ENODATA: return "ENODATA";
	case ERANGE: return "ERANGE";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EMLINK: return "EMLINK";
	case ETXTBSY: return "ETXTBSY";
	case ESPIPE: return "ESPIPE";
	case EBUSY: return "EBUSY";
	default:
		snprintf(buf, sizeof(buf), "errno%d", e);
		return buf;
	}
}

/* The result of a call returning -1 on error. */
static void
res(const char *name, long r)
{
	printf("%s: %s\n", name, r < 0 ? ename(errno) : "ok");
}

static void
resn(const char *name, long r)
{
	if (r < 0)
		printf("%s: %s\n", name, ename(errno));
	else
		printf("%s: %ld\n", name, r);
}

/* A digest of the file's bytes (FNV-1a) and its length, read by name. */
static void
digest(const char *label, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY);
	uint64_t h = 1469598103934665603ull, len = 0;
	unsigned char buf[65536];
	ssize_t n, i;

	if (fd < 0) {
		printf("%s: open %s\n", label, ename(errno));
		return;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++)
			h = (h ^ buf[i]) * 1099511628211ull;
		len += (uint64_t)n;
	}
	if (n < 0)
		printf("%s: read %s\n", label, ename(errno));
	else
		printf("%s: %llu bytes %016llx\n", label, (unsigned long long)len,
		       (unsigned long long)h);
	close(fd);
}

static void
fsize(const char *label, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		printf("%s: %s\n", label, ename(errno));
	else
		printf("%s: size %lld nlink %lu\n", label, (long long)st.st_size,
		       (unsigned long)st.st_nlink);
}

static int
mkfile(const char *name, const char *data)
{
	int fd = openat(dfd, name, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0 && data != NULL && write(fd, data, strlen(data)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
tsame(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static int
cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's entries, sorted, with their types. */
static void
listing(const char *label)
{
	DIR *dp = fdopendir(dup(dfd));
	struct dirent *e;
	char *names[512];
	size_t n = 0, i;

	if (dp == NULL) {
		printf("%s: %s\n", label, ename(errno));
		return;
	}
	rewinddir(dp);
	while ((e = readdir(dp)) != NULL && n < 512) {
		char buf[300];
		snprintf(buf, sizeof(buf), "%s/%d", e->d_name, e->d_type);
		names[n++] = strdup(buf);
	}
	closedir(dp);
	qsort(names, n, sizeof(names[0]), cmpstr);
	printf("%s:", label);
	for (i = 0; i < n; i++) {
		printf(" %s", names[i]);
		free(names[i]);
	}
	printf("\n");
}

static void
names(void)
{
	char longname[300];
	int fd;

	close(mkfile("f", "file\n"));
	mkdirat(dfd, "d", 0755);
	mkdirat(dfd, "d/sub", 0755);
	mkdirat(dfd, "e", 0755);
	close(mkfile("d/inner", "x"));
	symlinkat("f", dfd, "lnk");
	res("open O_EXCL existing", fd = openat(dfd, "f", O_RDWR | O_CREAT | O_EXCL, 0644));
	if (fd >= 0)
		close(fd);
	res("open O_EXCL on a symlink", fd = openat(dfd, "lnk", O_RDWR | O_CREAT | O_EXCL, 0644));
	if (fd >= 0)
		close(fd);
	res("open O_EXCL new", fd = openat(dfd, "new", O_RDWR | O_CREAT | O_EXCL, 0600));
	if (fd >= 0)
		close(fd);
	res("open missing", openat(dfd, "missing", O_RDONLY));
	res("open file/x", openat(dfd, "f/x", O_RDONLY));
	res("open dir O_WRONLY", openat(dfd, "d", O_WRONLY));
	res("open dir O_RDWR", openat(dfd, "d", O_RDWR));
	res("open file O_DIRECTORY", openat(dfd, "f", O_RDONLY | O_DIRECTORY));
	res("open symlink O_NOFOLLOW", openat(dfd, "lnk", O_RDONLY | O_NOFOLLOW));
	res("open O_CREAT dir", openat(dfd, "d", O_RDWR | O_CREAT, 0644));
	res("mkdir existing", mkdirat(dfd, "d", 0755));
	res("mkdir over file", mkdirat(dfd, "f", 0755));
	res("rmdir non-empty", unlinkat(dfd, "d", AT_REMOVEDIR));
	res("rmdir file", unlinkat(dfd, "f", AT_REMOVEDIR));
	res("rmdir missing", unlinkat(dfd, "missing", AT_REMOVEDIR));
	res("unlink dir", unlinkat(dfd, "d", 0));
	res("unlink missing", unlinkat(dfd, "missing", 0));
	res("rename dir over file", renameat(dfd, "e", dfd, "f"));
	res("rename file over dir", renameat(dfd, "f", dfd, "e"));
	res("rename dir over non-empty", renameat(dfd, "e", dfd, "d"));
	res("rename dir into itself", renameat(dfd, "d", dfd, "d/sub/x"));
	res("rename missing", renameat(dfd, "missing", dfd, "x"));
	res("rename noreplace existing",
	    renameat2(dfd, "f", dfd, "lnk", RENAME_NOREPLACE));
	close(mkfile("x1", "one\n"));
	close(mkfile("x2", "two, longer\n"));
	res("rename exchange", renameat2(dfd, "x1", dfd, "x2", RENAME_EXCHANGE));
	digest("x1 after exchange", "x1");
	digest("x2 after exchange", "x2");
	res("rename exchange missing", renameat2(dfd, "x1", dfd, "missing", RENAME_EXCHANGE));
	res("link dir", linkat(dfd, "d", dfd, "dl", 0));
	res("link existing", linkat(dfd, "f", dfd, "x1", 0));
	res("link missing", linkat(dfd, "missing", dfd, "ml", 0));
	res("symlink existing", symlinkat("f", dfd, "x1"));
	{
		char b[64];
		resn("readlink file", readlinkat(dfd, "f", b, sizeof(b)));
		resn("readlink symlink", readlinkat(dfd, "lnk", b, sizeof(b)));
	}
	memset(longname, 'n', 256);
	longname[256] = '\0';
	res("open 256-byte name", openat(dfd, longname, O_RDWR | O_CREAT, 0644));
	res("mkdir 256-byte name", mkdirat(dfd, longname, 0755));
	longname[255] = '\0';
	res("open 255-byte name", fd = openat(dfd, longname, O_RDWR | O_CREAT, 0644));
	if (fd >= 0)
		close(fd);
	res("unlink 255-byte name", unlinkat(dfd, longname, 0));
	{
		struct stat st;
		fstatat(dfd, "d", &st, 0);
		printf("nlink of a dir with one subdir: %lu\n", (unsigned long)st.st_nlink);
	}
	res("mkfifo", mkfifoat(dfd, "fifo", 0644));
	res("open fifo O_WRONLY|O_NONBLOCK, no reader",
	    openat(dfd, "fifo", O_WRONLY | O_NONBLOCK));
	res("mknod existing", mknodat(dfd, "f", S_IFIFO | 0644, 0));
	res("open O_CREAT|O_DIRECTORY", openat(dfd, "cd", O_RDWR | O_CREAT | O_DIRECTORY, 0644));
	res("rmdir .", unlinkat(dfd, "d/.", AT_REMOVEDIR));
	res("rmdir ..", unlinkat(dfd, "d/sub/..", AT_REMOVEDIR));
	res("open file/", openat(dfd, "f/", O_RDONLY));
	res("mkdir trailing slash", mkdirat(dfd, "ts/", 0755));
	res("unlink trailing slash", unlinkat(dfd, "f/", 0));
	res("lchmod symlink", fchmodat(dfd, "lnk", 0600, AT_SYMLINK_NOFOLLOW));
	res("chmod fifo", fchmodat(dfd, "fifo", 0600, 0));
	res("link a symlink", linkat(dfd, "lnk", dfd, "lnk2", 0));
	{
		struct stat st;
		fstatat(dfd, "lnk2", &st, AT_SYMLINK_NOFOLLOW);
		printf("linked symlink is a symlink: %d nlink %lu\n", S_ISLNK(st.st_mode),
		       (unsigned long)st.st_nlink);
	}
	/* rename onto another link of the same file: nothing happens */
	close(mkfile("same1", "same\n"));
	linkat(dfd, "same1", dfd, "same2", 0);
	res("rename onto its own link", renameat(dfd, "same1", dfd, "same2"));
	res("both links stay", faccessat(dfd, "same1", F_OK, 0) == 0 &&
	    faccessat(dfd, "same2", F_OK, 0) == 0 ? 0 : -1);
	res("rename onto itself", renameat(dfd, "same1", dfd, "same1"));
	res("rename dir onto itself", renameat(dfd, "d", dfd, "d"));
	listing("the root");
}

static void
open_files(void)
{
	char buf[64];
	struct stat st;
	int fd, fd2;
	ssize_t n;

	/* unlink of an open file */
	fd = mkfile("u", "before\n");
	res("unlink open", unlinkat(dfd, "u", 0));
	fsize("fstat unlinked", fd);
	resn("write unlinked", write(fd, "after\n", 6));
	n = pread(fd, buf, sizeof(buf), 0);
	printf("read unlinked: %.*s", n > 0 ? (int)n : 0, buf);
	printf("\n");
	resn("ftruncate unlinked", ftruncate(fd, 3));
	fsize("fstat unlinked, truncated", fd);
	close(fd);

	/* rename of an open file */
	fd = mkfile("r1", "r1 data\n");
	res("rename open", renameat(dfd, "r1", dfd, "r2"));
	resn("write renamed", write(fd, "more\n", 5));
	close(fd);
	digest("renamed file", "r2");

	/* rename over an open file: the old one stays readable */
	fd = mkfile("o1", "old one\n");
	close(mkfile("o2", "new one\n"));
	res("rename over open", renameat(dfd, "o2", dfd, "o1"));
	n = pread(fd, buf, sizeof(buf), 0);
	printf("read replaced: %.*s", n > 0 ? (int)n : 0, buf);
	fsize("fstat replaced", fd);
	resn("write replaced", pwrite(fd, "OLD", 3, 0));
	close(fd);
	digest("the new o1", "o1");

	/* hard links */
	fd = mkfile("h1", "linked\n");
	res("link", linkat(dfd, "h1", dfd, "h2", 0));
	fsize("fstat linked", fd);
	resn("write via one name", pwrite(fd, "LINKED", 6, 0));
	close(fd);
	digest("read via the other", "h2");
	res("unlink one link", unlinkat(dfd, "h1", 0));
	fstatat(dfd, "h2", &st, 0);
	printf("nlink after unlink: %lu\n", (unsigned long)st.st_nlink);

	/* descriptors of the wrong kind */
	fd = openat(dfd, "h2", O_RDONLY);
	resn("write O_RDONLY", write(fd, "x", 1));
	close(fd);
	fd = openat(dfd, "h2", O_WRONLY);
	resn("read O_WRONLY", read(fd, buf, 1));
	resn("ftruncate -1", ftruncate(fd, -1));
	close(fd);
	fd = openat(dfd, "h2", O_RDONLY);
	resn("ftruncate O_RDONLY", ftruncate(fd, 0));
	close(fd);
	res("truncate dir", truncate("d", 0));
	res("truncate fifo", truncate("fifo", 0));
	res("truncate symlink to a file", truncate("lnk", 4));
	fd = openat(dfd, "f", O_RDONLY);
	fsize("after truncate through a symlink", fd);
	close(fd);

	/* O_TRUNC with O_RDONLY truncates too */
	fd = openat(dfd, "h2", O_RDONLY | O_TRUNC);
	fsize("open O_RDONLY|O_TRUNC", fd);
	close(fd);

	/* O_APPEND on a plain file, and pwrite on it */
	fd = mkfile("ap", "0123456789");
	close(fd);
	fd = openat(dfd, "ap", O_WRONLY | O_APPEND);
	resn("append write", write(fd, "abc", 3));
	resn("append pwrite at 0", pwrite(fd, "XYZ", 3, 0));
	resn("lseek after append", lseek(fd, 0, SEEK_CUR));
	close(fd);
	digest("appended", "ap");

	/* O_TMPFILE, then linked in */
	fd = openat(dfd, ".", O_TMPFILE | O_RDWR, 0600);
	res("O_TMPFILE", fd);
	if (fd >= 0) {
		char p[64];
		resn("write tmpfile", write(fd, "anonymous\n", 10));
		fsize("fstat tmpfile", fd);
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		res("link tmpfile", linkat(AT_FDCWD, p, dfd, "tmpl", AT_SYMLINK_FOLLOW));
		close(fd);
		digest("linked tmpfile", "tmpl");
	}
	fd2 = openat(dfd, ".", O_TMPFILE | O_RDWR | O_EXCL, 0600);
	res("O_TMPFILE|O_EXCL", fd2);
	if (fd2 >= 0) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd2);
		res("link O_EXCL tmpfile", linkat(AT_FDCWD, p, dfd, "tmpx", AT_SYMLINK_FOLLOW));
		close(fd2);
	}
	res("O_TMPFILE O_RDONLY", openat(dfd, ".", O_TMPFILE | O_RDONLY, 0600));
	res("O_TMPFILE on a file", openat(dfd, "ap", O_TMPFILE | O_RDWR, 0600));
}

static void
sparse(void)
{
	struct stat st;
	char buf[16];
	int fd = mkfile("sp", NULL);

	resn("pwrite at 10 MiB", pwrite(fd, "end", 3, 10 << 20));
	fsize("sparse size", fd);
	/* not yet written back: the hole holds no blocks either */
	fstat(fd, &st);
	printf("blocks of a sparse file held open: %s\n",
	       st.st_blocks < 2048 ? "under 1 MiB" : "1 MiB or more");
	resn("pread in the hole", pread(fd, buf, 4, 4096));
	printf("hole bytes: %d %d %d %d\n", buf[0], buf[1], buf[2], buf[3]);
	/* the data not yet written back, and the hole (kernel_cache=off:
	 * the kernel's own answer, data up to the size) */
	resn("lseek SEEK_DATA in the hole", lseek(fd, 4096, SEEK_DATA));
	resn("lseek SEEK_HOLE at 0", lseek(fd, 0, SEEK_HOLE));
	resn("lseek SEEK_HOLE in the data", lseek(fd, 10 << 20, SEEK_HOLE));
	resn("ftruncate grow", ftruncate(fd, 20 << 20));
	fsize("grown", fd);
	resn("pread past end", pread(fd, buf, 4, 30 << 20));
	resn("ftruncate shrink", ftruncate(fd, 5));
	resn("pread after shrink", pread(fd, buf, 16, 0));
	resn("lseek SEEK_END", lseek(fd, 0, SEEK_END));
	resn("lseek SEEK_DATA past end", lseek(fd, 100, SEEK_DATA));
	resn("lseek SEEK_HOLE past end", lseek(fd, 100, SEEK_HOLE));
	resn("lseek negative", lseek(fd, -1, SEEK_SET));
	fsync(fd);
	close(fd);
	fstatat(dfd, "sp", &st, 0);
	printf("sparse size after close: %lld\n", (long long)st.st_size);
	/* a hole only, held open: no blocks */
	fd = mkfile("hole", NULL);
	resn("ftruncate 1 GiB", ftruncate(fd, 1 << 30));
	fsync(fd);
	fstat(fd, &st);
	printf("blocks of an open hole: %lld\n", (long long)st.st_blocks);
	fstatat(dfd, "hole", &st, 0);
	printf("blocks of an open hole, by name: %lld\n", (long long)st.st_blocks);
	close(fd);
}

static void
falloc(void)
{
	int fd = mkfile("fa", NULL);
	char data[8192];

	memset(data, 'a', sizeof(data));
	resn("write 8k", pwrite(fd, data, sizeof(data), 0));
	res("fallocate grow", fallocate(fd, 0, 0, 16384));
	fsize("after grow", fd);
	res("fallocate keep size", fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 65536));
	fsize("after keep size", fd);
	res("punch hole", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 1000));
	res("punch without keep size", fallocate(fd, FALLOC_FL_PUNCH_HOLE, 100, 1000));
	res("fallocate len 0", fallocate(fd, 0, 0, 0));
	res("fallocate off -1", fallocate(fd, 0, -1, 10));
	close(fd);
	digest("fallocated", "fa");
	/* ZERO_RANGE, which not every file system has (its lines all
	 * begin with "zero range") */
	fd = mkfile("fz", NULL);
	resn("zero range: write 8k", pwrite(fd, data, sizeof(data), 0));
	res("zero range", fallocate(fd, FALLOC_FL_ZERO_RANGE, 5000, 100));
	res("zero range past end", fallocate(fd, FALLOC_FL_ZERO_RANGE, 20000, 100));
	fsize("zero range: after", fd);
	close(fd);
	digest("zero range: the file", "fz");
	fd = openat(dfd, "fa", O_RDONLY);
	res("fallocate O_RDONLY", fallocate(fd, 0, 0, 10));
	close(fd);
}

static void
times(void)
{
	struct timespec tv[2] = { { 1000000000, 123456789 }, { 1100000000, 987654321 } };
	struct stat a, b;
	int fd = mkfile("t", "times\n");

	close(fd);
	res("utimensat", utimensat(dfd, "t", tv, 0));
	fstatat(dfd, "t", &a, 0);
	printf("atime %lld.%09ld mtime %lld.%09ld\n", (long long)a.st_atim.tv_sec,
	       a.st_atim.tv_nsec, (long long)a.st_mtim.tv_sec, a.st_mtim.tv_nsec);
	tv[0].tv_nsec = UTIME_OMIT;
	tv[1].tv_sec = 1200000000;
	tv[1].tv_nsec = 5;
	res("utimensat omit atime", utimensat(dfd, "t", tv, 0));
	fstatat(dfd, "t", &b, 0);
	printf("atime kept %d mtime %lld.%09ld\n", tsame(&a.st_atim, &b.st_atim),
	       (long long)b.st_mtim.tv_sec, b.st_mtim.tv_nsec);
	fd = openat(dfd, "t", O_WRONLY);
	resn("write", write(fd, "x", 1));
	close(fd);
	fstatat(dfd, "t", &a, 0);
	printf("mtime moved by a write: %d\n", !tsame(&a.st_mtim, &b.st_mtim));
	tv[0].tv_nsec = tv[1].tv_nsec = UTIME_OMIT;
	res("utimensat omit both", utimensat(dfd, "t", tv, 0));
	fstatat(dfd, "t", &b, 0);
	printf("both kept: %d\n", tsame(&a.st_mtim, &b.st_mtim) && tsame(&a.st_atim, &b.st_atim));
	res("utimensat missing", utimensat(dfd, "missing", NULL, 0));
	tv[0].tv_nsec = 1000000000;
	res("utimensat bad nsec", utimensat(dfd, "t", tv, 0));
	tv[0].tv_sec = 1;
	tv[0].tv_nsec = 0;
	tv[1] = tv[0];
	res("utimensat symlink nofollow", utimensat(dfd, "lnk", tv, AT_SYMLINK_NOFOLLOW));
	fstatat(dfd, "lnk", &a, AT_SYMLINK_NOFOLLOW);
	printf("symlink mtime %lld\n", (long long)a.st_mtim.tv_sec);
	fstatat(dfd, "f", &a, 0);
	printf("target mtime untouched: %d\n", a.st_mtim.tv_sec != 1);
}

/* Which of a name's times (m: mtime, c: ctime) an operation moved. */
struct tstamp {
	const char *name;
	struct stat st;
};

static void
tmark(struct tstamp *t, const char *name)
{
	t->name = name;
	fstatat(dfd, name, &t->st, AT_SYMLINK_NOFOLLOW);
	usleep(20000);	/* past the kernel's clock tick */
}

static void
tmoved(const char *op, struct tstamp *t)
{
	struct stat st;

	if (fstatat(dfd, t->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		printf("%s: %s %s\n", op, t->name, ename(errno));
		return;
	}
	printf("%s: %s%s%s\n", op, t->name,
	       tsame(&t->st.st_mtim, &st.st_mtim) ? "" : " mtime",
	       tsame(&t->st.st_ctim, &st.st_ctim) ? "" : " ctime");
}

static void
moved(void)
{
	struct tstamp t, u;
	int fd;

	mkdirat(dfd, "td", 0755);
	close(mkfile("td/f", "moved\n"));
	tmark(&t, "td");
	close(mkfile("td/g", NULL));
	tmoved("create", &t);
	tmark(&t, "td");
	unlinkat(dfd, "td/g", 0);
	tmoved("unlink", &t);
	tmark(&t, "td");
	tmark(&u, "td/f");
	renameat(dfd, "td/f", dfd, "td/f2");
	tmoved("rename: the dir", &t);
	u.name = "td/f2";
	tmoved("rename: the file", &u);
	tmark(&t, "td/f2");
	fchmodat(dfd, "td/f2", 0600, 0);
	tmoved("chmod", &t);
	tmark(&t, "td/f2");
	linkat(dfd, "td/f2", dfd, "td/f3", 0);
	tmoved("link", &t);
	tmark(&t, "td/f2");
	truncate("td/f2", 6);
	tmoved("truncate to the same size", &t);
	tmark(&t, "td/f2");
	truncate("td/f2", 3);
	tmoved("truncate", &t);
	tmark(&t, "td/f2");
	fd = openat(dfd, "td/f2", O_RDWR);
	resn("ftruncate", ftruncate(fd, 1));
	close(fd);
	tmoved("ftruncate", &t);
	tmark(&t, "td/f2");
	fd = openat(dfd, "td/f2", O_RDWR | O_TRUNC);
	close(fd);
	tmoved("O_TRUNC", &t);
	tmark(&t, "td/f2");
	fd = openat(dfd, "td/f2", O_RDWR | O_TRUNC);
	close(fd);
	tmoved("O_TRUNC of an empty file", &t);
	tmark(&t, "td/f2");
	fd = openat(dfd, "td/f2", O_RDWR);
	resn("fallocate grow", fallocate(fd, 0, 0, 100));
	close(fd);
	tmoved("fallocate grow", &t);
	tmark(&t, "td/f2");
	fd = openat(dfd, "td/f2", O_RDWR);
	resn("fallocate keep size", fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8192));
	close(fd);
	tmoved("fallocate keep size", &t);
	tmark(&t, "td/f2");
	fd = openat(dfd, "td/f2", O_RDWR);
	resn("punch hole", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 10));
	close(fd);
	tmoved("punch hole", &t);
	tmark(&t, "td/f2");
	fd = openat(dfd, "td/f2", O_RDWR);
	resn("write nothing", write(fd, "", 0));
	close(fd);
	tmoved("write of 0 bytes", &t);
	tmark(&t, "td/f2");
	fd = openat(dfd, "td/f2", O_RDONLY);
	close(fd);
	tmoved("open and close", &t);
	tmark(&t, "td");
	mkdirat(dfd, "td/sub", 0755);
	tmoved("mkdir", &t);
	tmark(&t, "td");
	unlinkat(dfd, "td/sub", AT_REMOVEDIR);
	tmoved("rmdir", &t);
	tmark(&t, "td");
	symlinkat("x", dfd, "td/sl");
	tmoved("symlink", &t);
	tmark(&t, "td");
	tmark(&u, "td/f2");
	linkat(dfd, "td/f2", dfd, "td/f4", 0);
	tmoved("link: the dir", &t);
	tmoved("link: the file", &u);
	tmark(&u, "td/f2");
	unlinkat(dfd, "td/f4", 0);
	tmoved("unlink of another link", &u);
	tmark(&u, "td/f2");
	fchownat(dfd, "td/f2", (uid_t)-1, (gid_t)-1, 0);
	tmoved("chown -1 -1", &u);
	tmark(&u, "td/f2");
	utimensat(dfd, "td/f2", NULL, 0);
	tmoved("utimensat now", &u);
	tmark(&u, "td/f2");
	fd = openat(dfd, "td/f2", O_WRONLY);
	resn("write 1", write(fd, "w", 1));
	close(fd);
	tmoved("write", &u);
	tmark(&u, "td/f2");
	fd = openat(dfd, "td/f2", O_RDONLY);
	{
		char b[4];
		resn("read 1", read(fd, b, 1));
	}
	close(fd);
	tmoved("read", &u);
	tmark(&t, "td");
	tmark(&u, "td/f2");
	renameat(dfd, "td/f2", dfd, "td/f3");
	tmoved("rename over a link: the dir", &t);
	u.name = "td/f3";
	tmoved("rename over a link: the file", &u);
}

static void
modes(void)
{
	struct stat st;
	int fd;

	close(mkfile("m", "mode\n"));
	res("chmod 4755", fchmodat(dfd, "m", 04755, 0));
	fstatat(dfd, "m", &st, 0);
	printf("mode %o\n", st.st_mode & 07777);
	res("chmod 0", fchmodat(dfd, "m", 0, 0));
	fd = openat(dfd, "m", O_RDONLY);
	res("open a 0 file (root)", fd);
	if (fd >= 0)
		close(fd);
	res("chmod missing", fchmodat(dfd, "missing", 0644, 0));
	fd = openat(dfd, "m", O_RDONLY);
	res("fchmod", fchmod(fd, 0640));
	fstat(fd, &st);
	printf("fstat mode %o\n", st.st_mode & 07777);
	close(fd);
	res("chown", fchownat(dfd, "m", 1, 1, 0));
	fstatat(dfd, "m", &st, 0);
	printf("owner %u %u\n", (unsigned)st.st_uid, (unsigned)st.st_gid);
	res("lchown symlink", fchownat(dfd, "lnk", 2, 2, AT_SYMLINK_NOFOLLOW));
	fstatat(dfd, "lnk", &st, AT_SYMLINK_NOFOLLOW);
	printf("symlink owner %u %u\n", (unsigned)st.st_uid, (unsigned)st.st_gid);
	res("faccessat W_OK", faccessat(dfd, "m", W_OK, 0));
	res("faccessat X_OK of 0640 (root)", faccessat(dfd, "m", X_OK, 0));
}

static void
xattrs(void)
{
	char path[64], buf[64];
	int fd;

	close(mkfile("xa", "xattr\n"));
	snprintf(path, sizeof(path), "xa");
	fd = openat(dfd, "xa", O_RDONLY);
	res("fsetxattr", fsetxattr(fd, "user.one", "1", 1, 0));
	res("fsetxattr XATTR_CREATE existing", fsetxattr(fd, "user.one", "2", 1, XATTR_CREATE));
	res("fsetxattr XATTR_REPLACE missing", fsetxattr(fd, "user.two", "2", 1, XATTR_REPLACE));
	res("fsetxattr XATTR_REPLACE", fsetxattr(fd, "user.one", "11", 2, XATTR_REPLACE));
	resn("fgetxattr", fgetxattr(fd, "user.one", buf, sizeof(buf)));
	resn("fgetxattr size", fgetxattr(fd, "user.one", NULL, 0));
	resn("fgetxattr small", fgetxattr(fd, "user.one", buf, 1));
	resn("fgetxattr missing", fgetxattr(fd, "user.none", buf, sizeof(buf)));
	resn("flistxattr", flistxattr(fd, buf, sizeof(buf)));
	resn("flistxattr small", flistxattr(fd, buf, 2));
	res("fremovexattr missing", fremovexattr(fd, "user.none"));
	res("fremovexattr", fremovexattr(fd, "user.one"));
	res("fsetxattr bad namespace", fsetxattr(fd, "bogus.one", "1", 1, 0));
	res("fsetxattr empty value", fsetxattr(fd, "user.empty", "", 0, 0));
	resn("fgetxattr empty value", fgetxattr(fd, "user.empty", buf, sizeof(buf)));
	close(fd);
}

int
main(int argc, char **argv)
{
	if (argc < 2 || (dfd = open(argv[1], O_RDONLY | O_DIRECTORY)) < 0 ||
	    fchdir(dfd) < 0) {
		fprintf(stderr, "usage: fsprobe DIR [xattr]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	names();
	open_files();
	sparse();
	falloc();
	times();
	moved();
	modes();
	if (argc > 2 && strcmp(argv[2], "xattr") == 0)
		xattrs();
	return 0;
}
