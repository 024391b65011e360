/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * xprobe - for tests/test-mount-meta.sh, the system calls that the shell
 * tools cannot make as the test needs them:
 *   xprobe getxattr PATH NAME SIZE    getxattr(2) with a buffer of SIZE
 *   xprobe listxattr PATH SIZE        listxattr(2) with a buffer of SIZE
 *   xprobe copy IN OFF OUT OFF LEN    one copy_file_range(2)
 *   xprobe hold FILE DATA CMD...      CMD with FILE open and written, see below
 *   xprobe seekhole FILE              20 rounds: write 64 blocks of 4 KiB
 *                                     (every other 64 KiB), SEEK_HOLE from 0
 * Each call prints its result: the count, then the bytes (NULs as ','),
 * or ERANGE, or strerror's text.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Print a call's result; frees buf. */
static int
result(ssize_t r, char *buf)
{
	if (r < 0) {
		printf("%s\n", errno == ERANGE ? "ERANGE" : strerror(errno));
	} else {
		printf("%zd", r);
		if (buf != NULL)
			for (ssize_t i = 0; i < r; i++)
				putchar(buf[i] ? buf[i] : ',');
		putchar('\n');
	}
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "getxattr") == 0) {
		size_t n = strtoul(argv[4], NULL, 0);
		char *buf = n ? malloc(n) : NULL;
		return result(getxattr(argv[2], argv[3], buf, n), buf);
	}
	if (argc == 4 && strcmp(argv[1], "listxattr") == 0) {
		size_t n = strtoul(argv[3], NULL, 0);
		char *buf = n ? malloc(n) : NULL;
		return result(listxattr(argv[2], buf, n), buf);
	}
	if (argc == 7 && strcmp(argv[1], "copy") == 0) {
		loff_t oi = strtoll(argv[3], NULL, 0), oo = strtoll(argv[5], NULL, 0);
		int in = open(argv[2], O_RDONLY), out = open(argv[4], O_WRONLY);
		if (in < 0 || out < 0)
			return perror("open"), 1;
		return result(copy_file_range(in, &oi, out, &oo,
					      strtoul(argv[6], NULL, 0), 0), NULL);
	}
	if (argc >= 5 && strcmp(argv[1], "hold") == 0) {
		/* hold FILE DATA CMD...: write DATA's bytes into FILE at 0 and
		 * run CMD while the descriptor stays open; exit with CMD's
		 * status.  Every close of a descriptor is a FUSE flush (which
		 * writes back), so CMD is forked before FILE is opened: it
		 * never has the descriptor to close, even at exec. */
		char buf[65536], go;
		off_t off = 0;
		ssize_t n;
		int st, fd, d, p[2];
		pid_t pid;
		if (pipe(p) < 0 || (pid = fork()) < 0)
			return perror("fork"), 1;
		if (pid == 0) {
			close(p[1]);
			if (read(p[0], &go, 1) != 1)
				_exit(126);
			execvp(argv[4], argv + 4);
			_exit(127);
		}
		close(p[0]);
		fd = open(argv[2], O_RDWR | O_CREAT, 0644);
		d = open(argv[3], O_RDONLY);
		if (fd < 0 || d < 0)
			return perror("open"), 1;
		while ((n = read(d, buf, sizeof(buf))) > 0) {
			if (pwrite(fd, buf, (size_t)n, off) != n)
				return perror("pwrite"), 1;
			off += n;
		}
		if (write(p[1], "g", 1) != 1 || waitpid(pid, &st, 0) < 0)
			return 1;
		if (close(fd) < 0)
			return perror("close"), 1;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	if (argc == 3 && strcmp(argv[1], "seekhole") == 0) {
		static char blk[4096];
		int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			return perror(argv[2]), 1;
		memset(blk, 'q', sizeof(blk));
		for (int r = 0; r < 20; r++) {
			for (int i = 0; i < 64; i++)
				if (pwrite(fd, blk, sizeof(blk),
					   (off_t)(i * 2 + r % 2) * 65536) != (ssize_t)sizeof(blk))
					return perror("pwrite"), 1;
			if (lseek(fd, 0, SEEK_HOLE) < 0)
				return perror("lseek SEEK_HOLE"), 1;
		}
		return close(fd) < 0 ? perror("close"), 1 : 0;
	}
	fprintf(stderr, "usage: xprobe getxattr PATH NAME SIZE | listxattr PATH SIZE |\n"
		"  copy IN OFF OUT OFF LEN | hold FILE DATA CMD... | seekhole FILE\n");
	return 2;
}
