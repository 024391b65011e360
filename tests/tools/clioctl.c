/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clioctl - one device opened through libclio's cache, driven by commands
 * on stdin, so that a test script can act on the server between two
 * calls (kill it, restart it) while the same process keeps its cache and
 * device.  Every command prints one line: "ok [VALUE]" or "err ERRNO
 * MESSAGE".
 *
 *   clioctl DEVICE MODEL
 *
 * MODEL is a local file that gets the same writes (the expected contents
 * of the device).  Commands:
 *   write OFF LEN SEED   write LEN bytes of a pattern made from SEED at OFF
 *   devwrite OFF LEN SEED  the same onto the device itself (clio_dev_pwrite,
 *                        not the cache; blocks that the cache holds there
 *                        are not updated)
 *   writeback            clio_writeback: written back, not flushed
 *   fsync                clio_fsync
 *   devread OFF LEN      read from the device itself (clio_dev_pread, not
 *                        the cache) and compare with MODEL
 *   dirty                the cache's dirty bytes
 *   param KEY            the device parameter KEY (clio_dev_params)
 *   quit                 close the file, the cache and the device
 */
#include <clio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
reply(int r)
{
	if (r < 0)
		printf("err %d %s\n", -r, strerror(-r));
	else
		printf("ok\n");
	fflush(stdout);
}

static void
pattern(unsigned char *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)(x >> 24);
	}
}

int
main(int argc, char **argv)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	char line[256], err[512], params[8192];
	clio_cache *cache;
	clio_dev *dev;
	clio_file *f;
	int model, r;
	const char *model_path;

	if (argc != 3) {
		fprintf(stderr, "usage: clioctl DEVICE MODEL\n");
		return 2;
	}
	r = clio_dev_open_err(argv[1], 0, &dev, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "clioctl: %s\n", err);
		return 1;
	}
	model_path = argv[2];
	model = open(model_path, O_RDWR | O_CREAT, 0644);
	if (model < 0 || clio_cache_new(&conf, &cache) < 0 ||
	    clio_open(cache, dev, CLIO_RDWR, &f) < 0) {
		fprintf(stderr, "clioctl: cannot set up %s\n", argv[1]);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		unsigned long long off, len, seed;
		char key[64];
		bool dw = strncmp(line, "dev", 3) == 0;

		if (sscanf(line + (dw ? 3 : 0), "write %llu %llu %llu", &off, &len, &seed) == 3) {
			unsigned char *buf = malloc(len ? len : 1);
			ssize_t n;

			if (buf == NULL) {
				reply(-ENOMEM);
				continue;
			}
			pattern(buf, len, seed);
			n = dw ? clio_dev_pwrite(dev, buf, len, off) : clio_pwrite(f, buf, len, off);
			if (n >= 0 && (size_t)n != len)
				n = -EIO;
			if (n >= 0 && pwrite(model, buf, len, (off_t)off) != (ssize_t)len)
				n = -errno;
			free(buf);
			reply(n < 0 ? (int)n : 0);
		} else if (sscanf(line, "devread %llu %llu", &off, &len) == 2) {
			unsigned char *got = malloc(len ? len : 1), *want = calloc(1, len ? len : 1);
			ssize_t n, m;
			size_t i;

			if (got == NULL || want == NULL) {
				free(got);
				free(want);
				reply(-ENOMEM);
				continue;
			}
			n = clio_dev_pread(dev, got, len, off);
			m = pread(model, want, len, (off_t)off);
			if (n < 0) {
				reply((int)n);
			} else if (m < 0) {
				reply(-errno);
			} else {
				/* past the model's end the device reads zeros */
				for (i = 0; i < (size_t)n && got[i] == want[i]; i++)
					;
				if (i < (size_t)n)
					printf("err %d byte %llu differs from %s\n", EIO,
					       off + (unsigned long long)i, model_path);
				else
					printf("ok %zd\n", n);
			}
			free(got);
			free(want);
		} else if (strcmp(line, "writeback\n") == 0) {
			reply(clio_writeback(f));
		} else if (strcmp(line, "fsync\n") == 0) {
			reply(clio_fsync(f));
		} else if (strcmp(line, "dirty\n") == 0) {
			struct clio_cache_stats st;

			clio_cache_stats(cache, &st);
			printf("ok %llu\n", (unsigned long long)st.dirty_bytes);
		} else if (sscanf(line, "param %63s", key) == 1) {
			char *p = params, *eol;
			size_t kl = strlen(key);
			const char *val = NULL;

			clio_dev_params(dev, params, sizeof(params));
			for (; *p != '\0'; p = eol + 1) {
				eol = strchr(p, '\n');
				if (eol == NULL)
					eol = p + strlen(p);
				if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
					*eol = '\0';
					val = p + kl + 1;
					break;
				}
				if (*eol == '\0')
					break;
			}
			if (val != NULL)
				printf("ok %s\n", val);
			else
				printf("err %d no parameter %s\n", ENOENT, key);
		} else if (strcmp(line, "quit\n") == 0) {
			r = clio_close(f);
			if (clio_cache_free(cache) < 0 && r == 0)
				r = -EIO;
			if (clio_dev_close(dev) < 0 && r == 0)
				r = -EIO;
			close(model);
			reply(r);
			return r < 0;
		} else {
			printf("err %d unknown command: %s", EINVAL, line);
		}
	}
	return 1;
}
