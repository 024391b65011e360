/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conf.c - the tunables: setting them by name from strings, and checking
 * a whole configuration.  The names are the seeds' (bsize, maxbsize,
 * maxphys, read_max, seqmax, ...); '-' and '_' are interchangeable.
 *
 * Invariant: clio_conf_set() either stores a valid value or returns
 * -EINVAL with a message naming the key and the value, changing nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct size_key {
	const char *name;
	size_t off;
	int width; /* 4 or 8 bytes */
	uint64_t min, max;
	bool pow2;
};

#define F32(f) offsetof(struct clio_conf, f), 4
#define F64(f) offsetof(struct clio_conf, f), 8

static const struct size_key size_keys[] = {
	{ "bsize", F32(bsize), 512, 1u << 20, true },
	{ "maxbsize", F32(maxbsize), 512, 1u << 20, true },
	{ "maxphys", F32(maxphys), 512, 64u << 20, true },
	{ "read_max", F32(read_max), 0, 4096, false },
	{ "seqmax", F32(seqmax), 1, 4096, false },
	{ "cache_size", F64(cache_size), 4096, 1ull << 40, false },
	{ "dirty_hi", F32(dirty_hi), 1, 100, false },
	{ "dirty_lo", F32(dirty_lo), 0, 99, false },
	{ "write_behind", F32(write_behind), 0, 2, false },
	{ "queue_depth", F32(queue_depth), 1, 256, false },
	{ "flusher", F32(flusher), 0, 1, false },
	{ "flush_behind", F64(flush_behind), 0, 1ull << 40, false },
	{ "disk_cache_size", F64(disk_cache_size), 0, 1ull << 50, false },
	{ "disk_cache_brun", F32(disk_cache_brun), 0, 100, false },
	{ "disk_cache_bcull", F32(disk_cache_bcull), 0, 100, false },
	{ "disk_cache_bstop", F32(disk_cache_bstop), 0, 100, false },
};

/* disk_cache=DIR: the directory, kept for the process (conf structs are
 * copied by value, so the string must outlive them all). */
struct kept_str {
	struct kept_str *next;
	char s[];
};
static struct kept_str *kept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *
keep_string(const char *v)
{
	struct kept_str *k;

	pthread_mutex_lock(&kept_lock);
	for (k = kept; k != NULL; k = k->next)
		if (strcmp(k->s, v) == 0)
			break;
	if (k == NULL && (k = malloc(sizeof(*k) + strlen(v) + 1)) != NULL) {
		strcpy(k->s, v);
		k->next = kept;
		kept = k;
	}
	pthread_mutex_unlock(&kept_lock);
	return k != NULL ? k->s : NULL;
}

static int
set_disk_cache(struct clio_conf *conf, const char *k, const char *value,
	       char *err, size_t errlen)
{
	struct stat st;

	if (strcmp(k, "disk_cache") == 0) {
		const char *s;
		if (*value == '\0' || strcmp(value, "off") == 0) {
			conf->disk_cache = NULL;
			return 0;
		}
		/* a directory: one that cannot be written now (read-only)
		 * is for the tier to step aside from, object by object */
		if (stat(value, &st) < 0 || !S_ISDIR(st.st_mode)) {
			set_err(err, errlen,
				"invalid disk_cache '%s' (a directory)", value);
			return -EINVAL;
		}
		char *abs = realpath(value, NULL);
		s = abs != NULL ? keep_string(abs) : NULL;
		free(abs);
		if (s == NULL)
			return -ENOMEM;
		conf->disk_cache = s;
		return 0;
	}
	if (strcmp(k, "disk_cache_mode") == 0) {
		if (strcmp(value, "writethrough") == 0)
			conf->disk_cache_mode = 0;
		else if (strcmp(value, "writeback") == 0)
			conf->disk_cache_mode = 1;
		else {
			set_err(err, errlen, "invalid disk_cache_mode '%s' "
				"(writethrough or writeback)", value);
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(k, "disk_cache_verify") == 0) {
		if (strcmp(value, "sample") == 0)
			conf->disk_cache_verify = 1;
		else if (strcmp(value, "none") == 0 || strcmp(value, "off") == 0)
			conf->disk_cache_verify = 0;
		else {
			set_err(err, errlen, "invalid disk_cache_verify '%s' "
				"(sample or none)", value);
			return -EINVAL;
		}
		return 0;
	}
	return 1;
}

static void
normalize(const char *key, char *out, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len && key[i] != '\0'; i++)
		out[i] = key[i] == '-' ? '_' : key[i];
	out[i] = '\0';
}

int
clio_conf_set(struct clio_conf *conf, const char *key, const char *value,
	      char *err, size_t errlen)
{
	char k[32];
	size_t i;

	if (conf == NULL || key == NULL || value == NULL) {
		set_err(err, errlen, "invalid option: %s is NULL",
			conf == NULL ? "conf" : key == NULL ? "key" : "value");
		return -EINVAL;
	}
	normalize(key, k, sizeof(k));
	if (strncmp(k, "disk_cache", 10) == 0) {
		int r = set_disk_cache(conf, k, value, err, errlen);
		if (r <= 0)
			return r;
	}
	if (strcmp(k, "cluster") == 0) {
		if (strcmp(value, "on") == 0)
			conf->cluster = CLIO_CLUSTER_ON;
		else if (strcmp(value, "lite") == 0)
			conf->cluster = CLIO_CLUSTER_LITE;
		else if (strcmp(value, "off") == 0)
			conf->cluster = CLIO_CLUSTER_OFF;
		else {
			set_err(err, errlen,
				"invalid cluster '%s' (on, lite or off)", value);
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(k, "rbw") == 0) {
		if (strcmp(value, "cluster") == 0)
			conf->rbw = CLIO_RBW_CLUSTER;
		else if (strcmp(value, "block") == 0)
			conf->rbw = CLIO_RBW_BLOCK;
		else {
			set_err(err, errlen,
				"invalid rbw '%s' (cluster or block)", value);
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(k, "dirty_age") == 0) {
		double v;
		if (parse_double(value, &v) < 0 || !(v > 0 && v <= 1e6)) { /* NaN too */
			set_err(err, errlen, "invalid dirty_age '%s' (seconds > 0, at most 1000000)",
				value);
			return -EINVAL;
		}
		conf->dirty_age = v;
		return 0;
	}
	for (i = 0; i < sizeof(size_keys) / sizeof(size_keys[0]); i++) {
		const struct size_key *sk = &size_keys[i];
		uint64_t v;

		if (strcmp(k, sk->name) != 0)
			continue;
		if (parse_size(value, &v) < 0 || v < sk->min || v > sk->max ||
		    (sk->pow2 && !IS_POW2(v))) {
			set_err(err, errlen,
				"invalid %s '%s' (%s%llu to %llu)", sk->name,
				value, sk->pow2 ? "a power of 2, " : "",
				(unsigned long long)sk->min,
				(unsigned long long)sk->max);
			return -EINVAL;
		}
		if (sk->width == 4) {
			uint32_t v32 = (uint32_t)v;
			memcpy((char *)conf + sk->off, &v32, 4);
		} else {
			memcpy((char *)conf + sk->off, &v, 8);
		}
		return 0;
	}
	set_err(err, errlen, "unknown option '%s'", key);
	return -EINVAL;
}

/* Every field of size_keys within what clio_conf_set() takes. */
static int
check_ranges(const struct clio_conf *conf, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < sizeof(size_keys) / sizeof(size_keys[0]); i++) {
		const struct size_key *sk = &size_keys[i];
		uint64_t v;

		if (sk->width == 4) {
			uint32_t v32;
			memcpy(&v32, (const char *)conf + sk->off, 4);
			v = v32;
		} else {
			memcpy(&v, (const char *)conf + sk->off, 8);
		}
		if (v < sk->min || v > sk->max || (sk->pow2 && !IS_POW2(v))) {
			set_err(err, errlen, "invalid %s %llu (%s%llu to %llu)",
				sk->name, (unsigned long long)v,
				sk->pow2 ? "a power of 2, " : "",
				(unsigned long long)sk->min,
				(unsigned long long)sk->max);
			return -EINVAL;
		}
	}
	if (!(conf->dirty_age > 0 && conf->dirty_age <= 1e6)) {
		set_err(err, errlen, "invalid dirty_age %g (seconds > 0, at most 1000000)",
			conf->dirty_age);
		return -EINVAL;
	}
	if ((unsigned)conf->cluster > CLIO_CLUSTER_OFF) {
		set_err(err, errlen, "invalid cluster %u (on, lite or off: 0 to 2)",
			(unsigned)conf->cluster);
		return -EINVAL;
	}
	if ((unsigned)conf->rbw > CLIO_RBW_BLOCK) {
		set_err(err, errlen, "invalid rbw %u (cluster or block: 0 or 1)",
			(unsigned)conf->rbw);
		return -EINVAL;
	}
	if (conf->disk_cache_mode > 1) {
		set_err(err, errlen, "invalid disk_cache_mode %u (0 writethrough, 1 writeback)",
			conf->disk_cache_mode);
		return -EINVAL;
	}
	if (conf->disk_cache_verify > 1) {
		set_err(err, errlen, "invalid disk_cache_verify %u (0 none, 1 sample)",
			conf->disk_cache_verify);
		return -EINVAL;
	}
	return 0;
}

int
clio_conf_check(const struct clio_conf *conf, char *err, size_t errlen)
{
	if (conf == NULL) {
		set_err(err, errlen, "no configuration (NULL)");
		return -EINVAL;
	}
	if (!IS_POW2(conf->bsize) || conf->bsize < 512 || conf->bsize > (1u << 20)) {
		set_err(err, errlen, "invalid bsize %u (a power of 2, 512 to 1M)",
			conf->bsize);
		return -EINVAL;
	}
	if (!IS_POW2(conf->maxbsize) || conf->maxbsize < conf->bsize) {
		set_err(err, errlen,
			"invalid maxbsize %u (a power of 2, at least bsize %u)",
			conf->maxbsize, conf->bsize);
		return -EINVAL;
	}
	if (!IS_POW2(conf->maxphys) || conf->maxphys < conf->bsize) {
		/* one buffer is one transfer at least */
		set_err(err, errlen,
			"invalid maxphys %u (a power of 2, at least bsize %u)",
			conf->maxphys, conf->bsize);
		return -EINVAL;
	}
	if (conf->cache_size < 8ull * conf->bsize) {
		set_err(err, errlen,
			"cache_size %llu too small: at least 8 buffers of %u",
			(unsigned long long)conf->cache_size, conf->bsize);
		return -EINVAL;
	}
	if (conf->dirty_hi < 1 || conf->dirty_hi > 100 ||
	    conf->dirty_lo >= conf->dirty_hi) {
		set_err(err, errlen,
			"invalid dirty_lo %u / dirty_hi %u (0 <= lo < hi <= 100)",
			conf->dirty_lo, conf->dirty_hi);
		return -EINVAL;
	}
	if (conf->disk_cache_bstop >= conf->disk_cache_bcull ||
	    conf->disk_cache_bcull >= conf->disk_cache_brun ||
	    conf->disk_cache_brun > 100) {
		set_err(err, errlen,
			"invalid disk_cache_bstop %u / bcull %u / brun %u "
			"(0 <= bstop < bcull < brun <= 100)",
			conf->disk_cache_bstop, conf->disk_cache_bcull,
			conf->disk_cache_brun);
		return -EINVAL;
	}
	return check_ranges(conf, err, errlen);
}
