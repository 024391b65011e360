/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * serve.c - `clio serve DEVICE [-o TUNABLES] (--socket PATH | --port N)
 * [-r] [-f] [--pidfile PATH] [--tls=on|require] [--tls-certificates DIR]`:
 * serves a clio device over NBD through clio's cache.  nbdkit is the
 * server and nbdkit-clio-plugin.so (nbdkit/clio-plugin.c) the plugin;
 * clio serve checks its arguments, opens the device once to check it,
 * and execs nbdkit, so that the server's pid is clio serve's.
 *
 * The plugin is looked for next to the clio binary (the build
 * directory), then in LIBDIR/clio/ (where make install puts it), then in
 * ../lib/clio/ beside the binary's directory.  A Unix socket, or with
 * --port 127.0.0.1 only; read-write unless -r; in the background (nbdkit
 * daemonizes, --pidfile names its pid file) unless -f.
 *
 * Exit: nbdkit's status once it runs (74, EX_IOERR, when the final
 * write-back failed: nbdkit/sigsync.c invariant 5); otherwise 64 (EX_USAGE) for bad
 * usage or a bad tunable, 66 (EX_NOINPUT) for a device that cannot be
 * opened, 69 (EX_UNAVAILABLE) when nbdkit or the plugin is missing, 73
 * (EX_CANTCREAT) when the socket path exists, the port is taken or the
 * pid file cannot be written (checked before nbdkit starts, so that the
 * message is one line).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

#ifndef CLIO_LIBDIR
#define CLIO_LIBDIR "/usr/local/lib"
#endif
#define PLUGIN_NAME "nbdkit-clio-plugin.so"
#define MAX_TUNABLES 64

static void
usage(FILE *fp)
{
	fprintf(fp,
		"usage: clio serve DEVICE [-o TUNABLES] (--socket PATH | --port N) [-r] [-f]\n"
		"                  [--pidfile PATH] [--tls=on|require]\n"
		"                  [--tls-certificates DIR]\n"
		"  -o K=V[,K=V...]  cache tunables (bsize, cache_size, maxphys, ...),\n"
		"                   prefault=off (the cache's memory left to its first use)\n"
		"  --socket PATH    serve on a Unix socket\n"
		"  --port N         serve on TCP port N of 127.0.0.1\n"
		"  -r               read-only\n"
		"  -f               in the foreground (default: nbdkit daemonizes)\n"
		"  --pidfile PATH   where the server writes its pid\n"
		"  --tls=on|require, --tls-certificates DIR   passed to nbdkit\n");
}

static int
file_exists(const char *p)
{
	return access(p, R_OK) == 0;
}

/* The plugin: next to the binary, in LIBDIR/clio, in ../lib/clio. */
static int
find_plugin(char *out, size_t len)
{
	char exe[PATH_MAX - 64], *slash; /* room for the rest of each path */
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(out, len, "%s/%s", exe, PLUGIN_NAME);
			if (file_exists(out))
				return 0;
		}
	}
	snprintf(out, len, "%s/clio/%s", CLIO_LIBDIR, PLUGIN_NAME);
	if (file_exists(out))
		return 0;
	if (n > 0) {
		snprintf(out, len, "%s/../lib/clio/%s", exe, PLUGIN_NAME);
		if (file_exists(out))
			return 0;
	}
	return -ENOENT;
}

static int
nbdkit_installed(void)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, cand[PATH_MAX];
	int found = 0;

	if (path == NULL)
		path = "/usr/bin:/bin";
	copy = strdup(path);
	if (copy == NULL)
		return 1; /* let exec tell */
	for (dir = strtok_r(copy, ":", &save); dir != NULL && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(cand, sizeof(cand), "%s/nbdkit", *dir ? dir : ".");
		found = access(cand, X_OK) == 0;
	}
	free(copy);
	return found;
}

/* -o K=V,K=V: each checked by clio_conf_set and kept (malloc'ed) for
 * nbdkit's command line; 0 or an exit code. */
static int
add_tunables(const char *arg, struct clio_conf *conf, char **tunables, int *ntun)
{
	char *list = strdup(arg), *kv, *save = NULL, err[512];
	int r = 0;

	if (list == NULL) {
		fprintf(stderr, "clio serve: out of memory\n");
		return EX_OSERR;
	}
	for (kv = strtok_r(list, ",", &save); kv != NULL && r == 0;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');

		if (eq == NULL || eq == kv) {
			fprintf(stderr, "clio serve: bad tunable '%s' (KEY=VALUE)\n", kv);
			r = EX_USAGE;
			break;
		}
		*eq = '\0';
		if (strcmp(kv, "prefault") == 0) { /* the plugin's own key */
			if (strcmp(eq + 1, "on") != 0 && strcmp(eq + 1, "off") != 0) {
				fprintf(stderr, "clio serve: prefault: '%s' is neither on nor off\n",
					eq + 1);
				r = EX_USAGE;
				break;
			}
		} else if (clio_conf_set(conf, kv, eq + 1, err, sizeof(err)) < 0) {
			fprintf(stderr, "clio serve: %s\n", err);
			r = EX_USAGE;
			break;
		}
		*eq = '=';
		if (*ntun == MAX_TUNABLES) {
			fprintf(stderr, "clio serve: more than %d tunables\n", MAX_TUNABLES);
			r = EX_USAGE;
		} else if ((tunables[*ntun] = strdup(kv)) == NULL) {
			r = EX_OSERR;
		} else {
			(*ntun)++;
		}
	}
	free(list);
	return r;
}

/* The directory of PATH must be there and writable (nbdkit makes the
 * file in it); 0 or an errno. */
static int
dir_writable(const char *path)
{
	char *dir = strdup(path), *slash;
	const char *d = ".";
	struct stat st;
	int e = 0;

	if (dir == NULL)
		return 0; /* let nbdkit tell */
	slash = strrchr(dir, '/');
	if (slash == dir) {
		d = "/";
	} else if (slash != NULL) {
		*slash = '\0';
		d = dir;
	}
	if (stat(d, &st) < 0)
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (access(d, W_OK | X_OK) < 0)
		e = errno;
	free(dir);
	return e;
}

/* The socket path must not exist (nbdkit does not replace it) and its
 * directory must be there and writable; 0, 64 or 73. */
static int
check_socket(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, e;

	if (path[0] == '\0') {
		fprintf(stderr, "clio serve: empty socket path\n");
		return EX_USAGE;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "clio serve: socket path '%s' is longer than %zu bytes\n",
			path, sizeof(sa.sun_path) - 1);
		return EX_USAGE;
	}
	if (lstat(path, &st) < 0) {
		if ((e = dir_writable(path)) == 0)
			return 0;
		fprintf(stderr, "clio serve: cannot make the socket '%s': %s\n", path,
			strerror(e));
		return EX_CANTCREAT;
	}
	if (!S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "clio serve: socket path '%s' exists and is no socket\n",
			path);
		return EX_CANTCREAT;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		e = errno;
	else
		e = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
	if (fd >= 0)
		close(fd);
	if (e == 0)
		fprintf(stderr, "clio serve: socket '%s' is in use by a server\n", path);
	else if (e == ECONNREFUSED)
		fprintf(stderr, "clio serve: socket '%s' exists (no server on it: "
				"remove it)\n", path);
	else /* a server may listen there: not ours to tell */
		fprintf(stderr, "clio serve: socket '%s' exists (%s)\n", path,
			strerror(e));
	return EX_CANTCREAT;
}

/* Port N of 127.0.0.1 must be free (bound as nbdkit binds it); 0 or 73. */
static int
check_port(uint64_t port)
{
	struct sockaddr_in sa;
	int fd, one = 1, r = 0;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0; /* let nbdkit tell */
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, errno == EADDRINUSE
					? "clio serve: port %llu of 127.0.0.1 is in use\n"
					: "clio serve: port %llu of 127.0.0.1: %s\n",
			(unsigned long long)port, strerror(errno));
		r = EX_CANTCREAT;
	}
	close(fd);
	return r;
}

/* The pid file must be one nbdkit can write: a directory that is there
 * and writable, the path no directory.  nbdkit writes it once in the
 * background, where it fails, exits and leaves clio serve's status 0 and
 * nothing serving; 0 or 73. */
static int
check_pidfile(const char *path)
{
	struct stat st;
	int e;

	if (path[0] == '\0')
		e = ENOENT;
	else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		e = EISDIR;
	else
		e = dir_writable(path);
	if (e == 0)
		return 0;
	fprintf(stderr, "clio serve: cannot write the pid file '%s': %s\n", path,
		strerror(e));
	return EX_CANTCREAT;
}

static int serve(char **argv, int argc, struct clio_conf *conf, char **tunables,
		 int ntun, const char *sock, const char *port, const char *pidfile,
		 const char *tls, const char *certs, int ro, int fg);

int
cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "port", required_argument, NULL, 'P' },
		{ "pidfile", required_argument, NULL, 'I' },
		{ "tls", required_argument, NULL, 'T' },
		{ "tls-certificates", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *port = NULL, *pidfile = NULL, *tls = NULL,
		   *certs = NULL;
	char *tunables[MAX_TUNABLES];
	int ntun = 0, ro = 0, fg = 0, c, i, r = 0;
	struct clio_conf conf = CLIO_CONF_DEFAULTS;

	if (cli_help_version(argc, argv, usage, NULL) == 0)
		return 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:rfh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			r = add_tunables(optarg, &conf, tunables, &ntun);
			if (r != 0)
				goto out;
			break;
		case 'r': ro = 1; break;
		case 'f': fg = 1; break;
		case 'S': sock = optarg; break;
		case 'P': port = optarg; break;
		case 'I': pidfile = optarg; break;
		case 'T':
			if (strcmp(optarg, "on") != 0 && strcmp(optarg, "require") != 0 &&
			    strcmp(optarg, "off") != 0) {
				fprintf(stderr, "clio serve: bad --tls '%s' (on, require or off)\n",
					optarg);
				r = EX_USAGE;
				goto out;
			}
			tls = optarg;
			break;
		case 'C': certs = optarg; break;
		case 'h': usage(stdout); r = 0; goto out;
		default: r = cli_bad_option("clio serve", c, argv); goto out;
		}
	}
	r = serve(argv, argc, &conf, tunables, ntun, sock, port, pidfile, tls,
		  certs, ro, fg);
out:
	for (i = 0; i < ntun; i++)
		free(tunables[i]);
	return r;
}

/* Checks the rest and execs nbdkit; returns only on failure. */
static int
serve(char **argv, int argc, struct clio_conf *conf, char **tunables, int ntun,
      const char *sock, const char *port, const char *pidfile, const char *tls,
      const char *certs, int ro, int fg)
{
	const char *nargv[32 + MAX_TUNABLES], *device;
	char plugin[PATH_MAX], err[1024], *devarg, *sockarg = NULL, tlsopt[32];
	int nargc = 0, i, r;
	uint64_t portnum = 0;
	struct stat st;
	clio_dev *d;

	if (optind + 1 != argc) {
		if (optind == argc)
			fprintf(stderr, "clio serve: no device (see clio serve --help)\n");
		else
			fprintf(stderr, "clio serve: one device only, not also '%s'\n",
				argv[optind + 1]);
		return EX_USAGE;
	}
	device = argv[optind];
	if ((sock == NULL) == (port == NULL)) {
		fprintf(stderr, "clio serve: give --socket PATH or --port N (one of them)\n");
		return EX_USAGE;
	}
	if (port != NULL && (parse_uint(port, &portnum) < 0 || portnum < 1 ||
			     portnum > 65535)) {
		fprintf(stderr, "clio serve: bad port '%s' (1 to 65535)\n", port);
		return EX_USAGE;
	}
	if (clio_conf_check(conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio serve: %s\n", err);
		return EX_USAGE;
	}
	if (certs != NULL) {
		int e = stat(certs, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
		if (e != 0) {
			fprintf(stderr, "clio serve: bad --tls-certificates '%s': %s\n",
				certs, strerror(e));
			return EX_USAGE;
		}
	}
	r = clio_dev_open_err(device, ro ? CLIO_DEV_RDONLY : 0, &d, err, sizeof(err));
	if (r == -EROFS || r == -EACCES) /* the plugin serves it read-only */
		r = clio_dev_open_err(device, CLIO_DEV_RDONLY, &d, err, sizeof(err));
	if (r < 0) {
		char shown[512];

		fprintf(stderr, "clio serve: cannot open '%s': %s\n",
			cli_printable(device, shown, sizeof(shown)), err[0] ? err : strerror(-r));
		return r == -EINVAL ? EX_USAGE : EX_NOINPUT;
	}
	clio_dev_close(d);
	if (find_plugin(plugin, sizeof(plugin)) < 0) {
		fprintf(stderr, "clio serve: %s not found next to clio nor in %s/clio\n",
			PLUGIN_NAME, CLIO_LIBDIR);
		return EX_UNAVAILABLE;
	}
	if (!nbdkit_installed()) {
		fprintf(stderr, "clio serve: nbdkit not found (apt-get install nbdkit)\n");
		return EX_UNAVAILABLE;
	}

	if (pidfile != NULL && (r = check_pidfile(pidfile)) != 0)
		return r;
	if ((r = sock != NULL ? check_socket(sock) : check_port(portnum)) != 0)
		return r;

	nargv[nargc++] = "nbdkit";
	if (fg)
		nargv[nargc++] = "-f";
	if (ro)
		nargv[nargc++] = "-r";
	if (sock != NULL) {
		nargv[nargc++] = "-U";
		nargv[nargc++] = sock;
	} else {
		nargv[nargc++] = "-i";
		nargv[nargc++] = "127.0.0.1";
		nargv[nargc++] = "-p";
		nargv[nargc++] = port;
	}
	if (pidfile != NULL) {
		nargv[nargc++] = "--pidfile";
		nargv[nargc++] = pidfile;
	}
	if (tls != NULL) {
		snprintf(tlsopt, sizeof(tlsopt), "--tls=%s", tls);
		nargv[nargc++] = tlsopt;
	}
	if (certs != NULL) {
		nargv[nargc++] = "--tls-certificates";
		nargv[nargc++] = certs;
	}
	nargv[nargc++] = plugin;
	devarg = malloc(strlen(device) + 8);
	if (devarg == NULL) {
		fprintf(stderr, "clio serve: out of memory\n");
		return EX_OSERR;
	}
	sprintf(devarg, "device=%s", device);
	nargv[nargc++] = devarg;
	if (sock != NULL) { /* the plugin removes it on exit */
		sockarg = malloc(strlen(sock) + 8);
		if (sockarg == NULL) {
			free(devarg);
			fprintf(stderr, "clio serve: out of memory\n");
			return EX_OSERR;
		}
		sprintf(sockarg, "socket=%s", sock);
		nargv[nargc++] = sockarg;
	}
	for (i = 0; i < ntun; i++)
		nargv[nargc++] = tunables[i];
	nargv[nargc] = NULL;
	fflush(stdout);
	execvp("nbdkit", (char *const *)nargv);
	r = errno;
	free(devarg);
	free(sockarg);
	fprintf(stderr, "clio serve: nbdkit: %s%s\n", strerror(r),
		r == ENOENT ? " (apt-get install nbdkit)" : "");
	return r == ENOENT ? EX_UNAVAILABLE : EX_OSERR;
}
