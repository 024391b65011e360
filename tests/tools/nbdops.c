/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nbdops - a scripted NBD client for the tests: the requests given on
 * the command line, in order, each on a connection of its own choosing:
 *   nbdops URI OP...
 * OP is one of (numbers decimal; @N: on connection N, 0 to 7, opened
 * at its first use; the default is connection 0):
 *   w:OFF:LEN:BYTE[:fua][@N]  write LEN bytes of value BYTE at OFF
 *   r:OFF:LEN:BYTE[@N]        read, every byte must be BYTE
 *   z:OFF:LEN[:fua][:nohole][@N]  zero (nohole: NBD_CMD_FLAG_NO_HOLE)
 *   t:OFF:LEN[@N]             trim
 *   f[@N]                     flush         d[@N]           disconnect
 *   s:MS                      sleep MS milliseconds
 * Each OP prints one line: "OP ok", "OP error ENAME" (the errno libnbd
 * gives) or "OP differs at OFF: X". Exit status 0 when every OP was ok,
 * 1 when one failed or differed, 2 on a usage or connection error.
 */
#include <errno.h>
#include <libnbd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCONNS 8

static struct nbd_handle *conns[NCONNS];

static struct nbd_handle *
conn(const char *uri, int n)
{
	if (conns[n] == NULL) {
		conns[n] = nbd_create();
		if (conns[n] == NULL || nbd_set_strict_mode(conns[n], 0) < 0 ||
		    nbd_connect_uri(conns[n], uri) < 0) {
			fprintf(stderr, "nbdops: %s: %s\n", uri, nbd_get_error());
			exit(2);
		}
	}
	return conns[n];
}

static const char *
ename(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case EIO: return "EIO";
	case ENOMEM: return "ENOMEM";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOTSUP: return "ENOTSUP";
	case ESHUTDOWN: return "ESHUTDOWN";
	case EROFS: return "EROFS";
	default: return strerror(e);
	}
}

int
main(int argc, char **argv)
{
	int i, bad = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: nbdops URI OP...\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		char op[256], *at, *fua, *nohole;
		unsigned long long off = 0, len = 0;
		unsigned byte = 0;
		int n = 0, r = 0;
		uint32_t flags;
		char *buf = NULL;
		struct nbd_handle *h;

		snprintf(op, sizeof(op), "%s", argv[i]);
		if ((at = strchr(op, '@')) != NULL) {
			*at = '\0';
			n = atoi(at + 1);
			if (n < 0 || n >= NCONNS) {
				fprintf(stderr, "nbdops: bad connection in '%s'\n", argv[i]);
				return 2;
			}
		}
		if ((nohole = strstr(op, ":nohole")) != NULL)
			*nohole = '\0';
		flags = (fua = strstr(op, ":fua")) != NULL ? LIBNBD_CMD_FLAG_FUA : 0;
		if (fua != NULL)
			*fua = '\0';
		if (nohole != NULL)
			flags |= LIBNBD_CMD_FLAG_NO_HOLE;
		if (op[0] == 's') {
			struct timespec ts;
			long ms = atol(op + 2);

			ts.tv_sec = ms / 1000;
			ts.tv_nsec = (ms % 1000) * 1000000L;
			nanosleep(&ts, NULL);
			printf("%s ok\n", argv[i]);
			fflush(stdout);
			continue;
		}
		if (op[0] != 'f' && op[0] != 'd' &&
		    sscanf(op + 1, ":%llu:%llu:%u", &off, &len, &byte) < 2) {
			fprintf(stderr, "nbdops: bad op '%s'\n", argv[i]);
			return 2;
		}
		h = conn(argv[1], n);
		if (op[0] == 'w' || op[0] == 'r') {
			buf = malloc(len ? len : 1);
			if (buf == NULL)
				return 2;
			memset(buf, op[0] == 'w' ? (int)byte : (int)(byte ^ 0xff), len);
		}
		switch (op[0]) {
		case 'w': r = nbd_pwrite(h, buf, len, off, flags); break;
		case 'r': r = nbd_pread(h, buf, len, off, 0); break;
		case 'z': r = nbd_zero(h, len, off, flags); break;
		case 't': r = nbd_trim(h, len, off, flags); break;
		case 'f': r = nbd_flush(h, 0); break;
		case 'd':
			r = nbd_shutdown(h, 0);
			nbd_close(h);
			conns[n] = NULL;
			break;
		default:
			fprintf(stderr, "nbdops: bad op '%s'\n", argv[i]);
			return 2;
		}
		if (r < 0) {
			printf("%s error %s\n", argv[i], ename(nbd_get_errno()));
			bad = 1;
		} else if (op[0] == 'r') {
			unsigned long long k;

			for (k = 0; k < len && (unsigned char)buf[k] == byte; k++)
				;
			if (k < len) {
				printf("%s differs at %llu: %u\n", argv[i], off + k,
				       (unsigned char)buf[k]);
				bad = 1;
			} else {
				printf("%s ok\n", argv[i]);
			}
		} else {
			printf("%s ok\n", argv[i]);
		}
		fflush(stdout);
		free(buf);
	}
	for (i = 0; i < NCONNS; i++)
		if (conns[i] != NULL) {
			nbd_shutdown(conns[i], 0);
			nbd_close(conns[i]);
		}
	return bad;
}
