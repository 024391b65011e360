/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchsrv.c - servers for the benches (see benchsrv.h).  Invariants:
 * every process started here is a child of the caller, stopped by its
 * pid and reaped (bench_reap, bench_nfs_stop); the servers listen on
 * 127.0.0.1 only, inside the namespace bench_private_ns() made.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "benchsrv.h"

pid_t
bench_spawn(char *const argv[], const char *out)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		setpgid(0, 0);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

void
bench_reap(pid_t *pid)
{
	int i, status;

	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	for (i = 0; i < 100 && waitpid(*pid, &status, WNOHANG) != *pid; i++)
		usleep(50000);
	if (i == 100) {
		kill(*pid, SIGKILL);
		waitpid(*pid, &status, 0);
	}
	*pid = 0;
}

bool
bench_running(pid_t pid)
{
	char path[64], buf[256];
	ssize_t n;
	int fd;

	if (kill(pid, 0) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' */
	const char *e = strrchr(buf, ')');
	return e == NULL || e[1] != ' ' || e[2] != 'Z';
}

bool
bench_wait_for(const char *path, const char *text, pid_t alive, int ms)
{
	static char buf[65536];

	for (int i = 0; i < ms / 20 && !bench_mount_stop; i++) {
		FILE *fp = fopen(path, "r");
		if (fp != NULL) {
			size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
			fclose(fp);
			buf[n] = '\0';
			if (text == NULL || strstr(buf, text) != NULL)
				return true;
		}
		if (alive > 0 && waitpid(alive, NULL, WNOHANG) == alive)
			return false;
		usleep(20000);
	}
	return false;
}

int
bench_private_ns(void)
{
	char *ip[] = { "ip", "link", "set", "lo", "up", NULL };
	pid_t p;
	int status;

	if (unshare(CLONE_NEWNS | CLONE_NEWNET) < 0)
		return -errno;
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/run", "tmpfs", 0, NULL) < 0)
		return -errno;
	if (mkdir("/run/rpcbind", 0755) < 0)
		return -errno;
	p = bench_spawn(ip, NULL);
	if (p < 0 || waitpid(p, &status, 0) != p || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -EIO;
	return 0;
}

int
bench_ganesha_start(struct bench_nfs *s)
{
	char conf[4300], log[4300], pidf[4300], recov[4300];
	FILE *fp;

	snprintf(conf, sizeof(conf), "%s/ganesha.conf", s->dir);
	snprintf(log, sizeof(log), "%s/ganesha.log", s->dir);
	snprintf(pidf, sizeof(pidf), "%s/ganesha.pid", s->dir);
	snprintf(recov, sizeof(recov), "%s/recov", s->dir);
	mkdir(recov, 0755);
	fp = fopen(conf, "w");
	if (fp == NULL)
		return -1;
	fprintf(fp,
		"NFS_CORE_PARAM { Protocols = 3, 4; NFS_Port = %d; MNT_Port = %d;\n"
		"  Enable_NLM = false; Enable_RQUOTA = false; }\n"
		"NFSv4 { Graceless = true; RecoveryBackend = fs; RecoveryRoot = %s; }\n"
		"EXPORT { Export_Id = 1; Path = %s; Pseudo = /export; Access_Type = RW;\n"
		"  Squash = No_Root_Squash; SecType = sys; Protocols = 3, 4;\n"
		"  Transports = TCP; Attr_Expiration_Time = 0; FSAL { Name = VFS; } }\n",
		BSRV_NFS_PORT, BSRV_MNT_PORT, recov, s->export);
	fclose(fp);
	char *rb[] = { "rpcbind", "-f", "-w", NULL };
	s->rpcbind = bench_spawn(rb, NULL);
	bench_wait_for("/run/rpcbind.sock", NULL, s->rpcbind, 2000);
	char *g[] = { "ganesha.nfsd", "-F", "-L", log, "-f", conf, "-p", pidf,
		      "-N", "NIV_EVENT", NULL };
	s->ganesha = bench_spawn(g, NULL);
	if (!bench_wait_for(log, "NFS SERVER INITIALIZED", s->ganesha, 15000)) {
		fprintf(stderr, "clio bench: ganesha.nfsd did not start (%s)\n", log);
		bench_nfs_stop(s);
		return -1;
	}
	return 0;
}

pid_t
bench_proxy_start(const char *proxy, double delay_ms, int nfs_port, int mnt_port,
		  const char *counts, const char *ready)
{
	char d[32], l1[32], l2[32];
	pid_t pid;

	snprintf(d, sizeof(d), "%g", delay_ms);
	snprintf(l1, sizeof(l1), "%d:%d", nfs_port, BSRV_NFS_PORT);
	snprintf(l2, sizeof(l2), "%d:%d", mnt_port, BSRV_MNT_PORT);
	char *with[] = { (char *)proxy, "-d", d, "-o", (char *)counts, "-r", (char *)ready,
			 l1, l2, NULL };
	char *without[] = { (char *)proxy, "-d", d, "-r", (char *)ready, l1, l2, NULL };
	pid = bench_spawn(counts != NULL ? with : without, NULL);
	if (pid < 0 || !bench_wait_for(ready, NULL, pid, 5000)) {
		fprintf(stderr, "clio bench: %s did not start\n", proxy);
		bench_reap(&pid);
		return -1;
	}
	return pid;
}

int
bench_nfs_start(struct bench_nfs *s, const char *self, double delay_ms)
{
	char ready[4300], proxy[4200];
	const char *slash = strrchr(self, '/');

	s->rpcbind = s->ganesha = s->proxy = 0;
	snprintf(proxy, sizeof(proxy), "%.*s/tests/tools/rpcproxy",
		 slash ? (int)(slash - self) : 1, slash ? self : ".");
	if (access(proxy, X_OK) != 0) {
		fprintf(stderr, "clio bench: %s not built (make tests)\n", proxy);
		return -1;
	}
	if (bench_ganesha_start(s) < 0)
		return -1;
	snprintf(ready, sizeof(ready), "%s/proxy.ready", s->dir);
	s->nfs_port = 3049;
	s->mnt_port = 30048;
	s->proxy = bench_proxy_start(proxy, delay_ms, s->nfs_port, s->mnt_port, NULL, ready);
	if (s->proxy < 0) {
		s->proxy = 0;
		bench_nfs_stop(s);
		return -1;
	}
	return 0;
}

void
bench_nfs_stop(struct bench_nfs *s)
{
	bench_reap(&s->proxy);
	bench_reap(&s->ganesha);
	bench_reap(&s->rpcbind);
}
