/*
 * stat.c - `clio stat MOUNTPOINT`: print the live statistics of a clio
 * mount, the control file MOUNTPOINT/.clio-stats (cli/mountstats.c).
 * Exit 66 (EX_NOINPUT) with a one-line error when MOUNTPOINT is not the
 * root of a clio mount; 74 (EX_IOERR) when the file cannot be read or
 * standard output written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"

#define STATS_NAME ".clio-stats"
#define FUSE_MAGIC 0x65735546 /* FUSE_SUPER_MAGIC */

int
cmd_stat(int argc, char **argv)
{
	char path[4096], buf[65536];
	struct statfs sf;
	ssize_t n;
	int fd, status = 0;

	if ((fd = cli_help_version(argc, argv, NULL,
				   "usage: clio stat MOUNTPOINT\n")) >= 0)
		return fd;
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: clio stat MOUNTPOINT\n");
		return EX_USAGE;
	}
	if (statfs(argv[1], &sf) < 0) {
		fprintf(stderr, "clio stat: %s: %s\n", argv[1], strerror(errno));
		return EX_NOINPUT;
	}
	snprintf(path, sizeof(path), "%s/%s", argv[1], STATS_NAME);
	/* a FUSE file system, so a stray .clio-stats elsewhere is not taken */
	fd = sf.f_type == FUSE_MAGIC ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		fprintf(stderr, "clio stat: %s: not a clio mount (no %s)\n",
			argv[1], STATS_NAME);
		return EX_NOINPUT;
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "clio stat: %s: %s\n", path, strerror(errno));
			status = EX_IOERR;
			break;
		}
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			break;
	}
	close(fd);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "clio stat: standard output: %s\n", strerror(errno));
		status = EX_IOERR;
	}
	return status;
}
