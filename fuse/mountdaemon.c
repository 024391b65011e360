/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountdaemon.c - `clio mount` without -f: the command returns only once
 * the daemon serves the mount, with the daemon's own exit status if it
 * could not (so a device that fails to open is an error of the command,
 * not a dead mount left behind).
 *
 * Invariants:
 *  1. mount_daemon_start forks before any thread exists; the parent
 *     never returns from it: it waits on a pipe for one byte, 0 once the
 *     child called mount_daemon_ready, and exits 0; if the pipe closes
 *     without that byte (the child ended), it exits with the child's
 *     status.
 *  2. Until mount_daemon_ready the child keeps the caller's working
 *     directory (relative device paths resolve as the user typed them)
 *     and its standard error (its one-line errors reach the user); then
 *     it moves to "/" and its standard streams to /dev/null.
 *  3. The write end of the pipe is close-on-exec and closed at ready;
 *     before ready the only other holder is the read-ahead helper
 *     (mountahead.c), which the daemon reaps before it exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "mount.h"

static int ready_fd = -1;

void
mount_daemon_start(void)
{
	int p[2], st;
	unsigned char byte;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "clio mount: pipe: %s\n", strerror(errno));
		exit(EX_OSERR);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "clio mount: fork: %s\n", strerror(errno));
		exit(EX_OSERR);
	}
	if (pid > 0) {
		close(p[1]);
		while ((n = read(p[0], &byte, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(byte);
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				_exit(EX_SOFTWARE);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : EX_SOFTWARE);
	}
	close(p[0]);
	ready_fd = p[1];
	setsid();
}

void
mount_daemon_ready(void)
{
	unsigned char ok = 0;
	int null;

	if (ready_fd < 0)
		return;
	if (chdir("/") < 0) {
		/* "/" is always there; keep the directory we have */
	}
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	while (write(ready_fd, &ok, 1) < 0 && errno == EINTR)
		;
	close(ready_fd);
	ready_fd = -1;
}
