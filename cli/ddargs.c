/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ddargs.c - the operands and options of `clio dd`: GNU dd 9.1's operands
 * (numbers with its suffixes and NxM products, conv=, iflag=, oflag=,
 * status=) and clio's --options (the cache's tunables, --iostat, --json).
 *
 * Invariants:
 *  1. Nothing is opened or written here: a bad operand returns EX_USAGE
 *     after one line on stderr naming it, and the command stops.
 *  2. On success struct dd holds what the copy needs in the form dd.h
 *     states (byte offsets, count split into records and bytes).
 *  3. The messages are GNU dd's, after "clio dd: ", so that a user (or a
 *     test) can compare them.
 */
#include <ctype.h>
#include <errno.h>
#include <langinfo.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <wchar.h>
#include <wctype.h>

#include "dd.h"
#include "util.h"

void
dd_usage(FILE *fp)
{
	fprintf(fp,
		"usage: clio dd [OPERAND]... [OPTION]...\n"
		"GNU dd's operands:\n"
		"  if=DEV of=DEV bs=N ibs=N obs=N cbs=N count=N skip=N iseek=N\n"
		"  seek=N oseek=N status=none|noxfer|progress\n"
		"  conv=ascii,ebcdic,ibm,block,unblock,lcase,ucase,sparse,swab,sync,\n"
		"       excl,nocreat,notrunc,noerror,fdatasync,fsync\n"
		"  iflag=, oflag=: append,direct,directory,dsync,sync,fullblock (iflag),\n"
		"       nonblock,noatime,nocache,noctty,nofollow,count_bytes,skip_bytes,\n"
		"       seek_bytes\n"
		"N takes c w b kB K MB M GB G ... suffixes, NxM products, and a final B\n"
		"for bytes (count, skip, seek).  clio's options:\n"
		"  [--bsize=N] [--maxbsize=N] [--maxphys=N] [--read-max=N]\n"
		"  [--cache-size=N] [--cluster=on|lite|off] [--rbw=cluster|block]\n"
		"  [--queue-depth=N] [--write-behind=N] [--seqmax=N]\n"
		"  [--dirty-hi=PCT] [--dirty-lo=PCT] [--dirty-age=SECONDS]\n"
		"  [--flusher=0|1] [--flush-behind=N] [--iostat=SECONDS] [--json]\n"
		"  [--disk-cache=DIR] [--disk-cache-size=N]\n"
		"  [--disk-cache-mode=writethrough|writeback] [--disk-cache-verify=sample]\n"
		"  [--disk-cache-brun=PCT] [--disk-cache-bcull=PCT] [--disk-cache-bstop=PCT]\n"
		"  [--help] [--version]\n"
		"DEV is a path, or a device string: file:PATH[?direct=1], mem:size=N,\n"
		"sim:preset=NAME[,...], fault:OPTS@DEV, nbd://..., nbd+unix://...,\n"
		"nfs://..., nfs+sim:..., rbd:POOL/IMAGE.  SIGUSR1 prints the statistics;\n"
		"SIGINT, SIGTERM, SIGHUP, SIGPIPE write back and report first.  See clio(1).\n");
}

static int
usage_error(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "clio dd: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return EX_USAGE;
}

/* One character of s in the locale's encoding (LC_CTYPE, as GNU dd sets
 * it): its length, and whether it is printable.  A byte that begins no
 * valid character is one unprintable byte. */
static size_t
char_at(const unsigned char *s, bool *printable)
{
	mbstate_t st;
	wchar_t w;
	size_t n;

	if (*s < 0x80 || MB_CUR_MAX == 1) {
		*printable = isprint(*s) != 0;
		return 1;
	}
	memset(&st, 0, sizeof(st));
	n = mbrtowc(&w, (const char *)s, strlen((const char *)s), &st);
	if (n == 0 || n == (size_t)-1 || n == (size_t)-2) {
		*printable = false;
		return 1;
	}
	*printable = iswprint((wint_t)w) != 0;
	return n;
}

/* A buffer for a quoted name: each byte of it takes at most 8 (a
 * shell's '$'\ooo''), kept until the slot is used again. */
static char *
quote_buf(const char *name)
{
	static char *bufs[4];
	static int n;

	n = (n + 1) % 4;
	free(bufs[n]);
	bufs[n] = malloc(strlen(name) * 8 + 16);
	if (bufs[n] == NULL)
		abort();
	return bufs[n];
}

/* An unprintable character of n bytes as C escapes: \t or \ooo\ooo.. */
static size_t
escape(char *buf, const unsigned char *s, size_t n)
{
	const char *esc = strchr("\aa\bb\ff\nn\rr\tt\vv", *s);
	size_t k, o = 0;

	if (esc != NULL)
		return (size_t)sprintf(buf, "\\%c", esc[1]);
	for (k = 0; k < n; k++)
		o += (size_t)sprintf(buf + o, "\\%03o", s[k]);
	return o;
}

/* gnulib's quotearg, as GNU dd quotes file names: the shell_escape
 * style (quotef: quoted only where a shell needs it) or its "always" form
 * (quoteaf): 'name', "name" for a name with a ' that needs nothing else,
 * and $'\t' for what is not printable. */
static const char *
quote_name(const char *name, bool always)
{
	const unsigned char *s = (const unsigned char *)name;
	bool squote = false, compat_all = true, pending = false, printable;
	size_t i, k, n, o = 0;
	char *buf = quote_buf(name);

	always |= *s == '\0';
	for (i = 0; s[i]; i += n) {
		unsigned char c = s[i];
		bool compat = false;

		n = char_at(s + i, &printable);
		if (!printable) {
			always = true;
		} else if (n > 1) {
			compat = true;
		} else if (c == '{' || c == '}') {
			always |= i == 0 && s[1] == '\0';
		} else if (c == '#' || c == '~') {
			always |= i == 0;
		} else if (c == ' ' || c == '\'' || c == ':') {
			/* quotef also quotes a colon (quotearg_n_style_colon) */
			compat = always = true;
			squote |= c == '\'';
		} else if (strchr("!\"$&()*;<=>[^`|\\?", c) != NULL) {
			always = true;
		} else {
			compat = true; /* letters, digits, %+,-./]_ and @ */
		}
		compat_all &= compat;
	}
	if (!always)
		return strcpy(buf, name);
	if (squote && compat_all) {
		sprintf(buf, "\"%s\"", name);
		return buf;
	}
	buf[o++] = '\'';
	for (i = 0; s[i]; i += n) {
		unsigned char c = s[i];

		n = char_at(s + i, &printable);
		if (!printable) {
			if (!pending) {
				o += (size_t)sprintf(buf + o, "'$'");
				pending = true;
			}
			o += escape(buf + o, s + i, n);
			continue;
		}
		if (c == '\'')
			o += (size_t)sprintf(buf + o, "'\\'");
		else if (pending)
			o += (size_t)sprintf(buf + o, "''");
		pending = false;
		for (k = 0; k < n; k++)
			buf[o++] = (char)s[i + k];
	}
	buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

const char *
dd_quotef(const char *name)
{
	return quote_name(name, false);
}

const char *
dd_quoteaf(const char *name)
{
	return quote_name(name, true);
}

static bool
utf8_locale(void)
{
	const char *cs = nl_langinfo(CODESET);

	return strcasecmp(cs, "UTF-8") == 0 || strcasecmp(cs, "UTF8") == 0;
}

/* gnulib's quote(), as GNU dd quotes an operand: the locale style,
 * 'x' (or in a UTF-8 locale ‘x’) with C's backslash escapes, and the
 * closing quote escaped. */
const char *
dd_quote(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	const char *lq = utf8_locale() ? "\xe2\x80\x98" : "'";
	const char *rq = utf8_locale() ? "\xe2\x80\x99" : "'";
	char *buf = quote_buf(str);
	size_t i, k, n, o;
	bool printable;

	o = (size_t)sprintf(buf, "%s", lq);
	for (i = 0; s[i]; i += n) {
		n = char_at(s + i, &printable);
		if (strncmp((const char *)s + i, rq, strlen(rq)) == 0 || s[i] == '\\') {
			buf[o++] = '\\';
		} else if (!printable) {
			o += escape(buf + o, s + i, n);
			continue;
		}
		for (k = 0; k < n; k++)
			buf[o++] = (char)s[i + k];
	}
	sprintf(buf + o, "%s", rq);
	return buf;
}

/* ------------------------------------------------------------ numbers */

/* gnulib's xstrtoumax with dd's suffixes: strtoumax (leading blanks and
 * '+' allowed, '-' not), a suffix alone standing for 1 (bs=k), one of
 * "bcEGkKMPTwYZ", which K..Z may follow with "B" (powers of 1000), "D" or
 * "iB".  Returns NUM_* bits; *end is where parsing stopped. */
#define NUM_OVERFLOW	1
#define NUM_INVALID	2
#define NUM_SUFFIX	4
static const char dd_suffixes[] = "bcEGkKMPTwYZ0";

static int
xstrtou(const char *s, const char **end, uint64_t *val)
{
	const char *q = s;
	char *e;
	uint64_t v, scale = 1;
	int err = 0, len = 1, power = 1;
	unsigned base = 1024;

	*end = s;
	while (isspace((unsigned char)*q))
		q++;
	if (*q == '-')
		return NUM_INVALID;
	errno = 0;
	v = strtoull(s, &e, 10);
	*end = e;
	if (e == s) {
		if (*e == '\0' || strchr(dd_suffixes, *e) == NULL)
			return NUM_INVALID;
		v = 1;
	} else if (errno == ERANGE) {
		err = NUM_OVERFLOW;
	}
	*val = v;
	if (*e == '\0')
		return err;
	if (strchr(dd_suffixes, *e) == NULL || *e == '0')
		return err | NUM_SUFFIX;
	if (strchr("EGkKMPTYZ", *e) != NULL) {
		if (e[1] == 'i' && e[2] == 'B') {
			len = 3;
		} else if (e[1] == 'B' || e[1] == 'D') {
			base = 1000;
			len = 2;
		}
		power = (int)(strchr("kMGTPEZY", *e == 'K' ? 'k' : *e) -
			      "kMGTPEZY") + 1;
		scale = base;
	} else {
		scale = *e == 'b' ? 512 : *e == 'w' ? 2 : 1;
	}
	while (power-- > 0) {
		if (v > UINT64_MAX / scale) {
			v = UINT64_MAX;
			err |= NUM_OVERFLOW;
		} else {
			v *= scale;
		}
	}
	*val = v;
	*end = e + len;
	if (**end != '\0')
		err |= NUM_SUFFIX;
	return err;
}

/* GNU dd 9.1's parse_integer: N, N followed by a 'B' (bytes), and one
 * product NxM (bs=2x512), at most INT64_MAX. */
static int
parse_integer(const char *str, int64_t *out)
{
	const char *suffix;
	uint64_t n = 0, o = 0;
	int64_t result;
	int e = xstrtou(str, &suffix, &n), f;

	if ((e & ~NUM_OVERFLOW) == NUM_SUFFIX && *suffix == 'B' && str < suffix &&
	    suffix[-1] != 'B') {
		suffix++;
		if (*suffix == '\0')
			e &= ~NUM_SUFFIX;
	}
	if ((e & ~NUM_OVERFLOW) == NUM_SUFFIX && *suffix == 'x' &&
	    !(suffix[-1] == 'B' && strchr(suffix + 1, 'B'))) {
		f = xstrtou(suffix + 1, &suffix, &o);
		if ((f & ~NUM_OVERFLOW) != 0) {
			e = f;
			result = 0;
		} else if (__builtin_mul_overflow(n, o, &result) ||
			   (result != 0 && ((e | f) & NUM_OVERFLOW))) {
			e = NUM_OVERFLOW;
			result = INT64_MAX;
		} else {
			if (result == 0 && strncmp(str, "0x", 2) == 0)
				fprintf(stderr, "clio dd: warning: %s is a zero "
					"multiplier; use %s if that is intended\n",
					dd_quote("0x"), dd_quote("00x"));
			e = 0;
		}
	} else if (n <= INT64_MAX) {
		result = (int64_t)n;
	} else {
		e = NUM_OVERFLOW;
		result = INT64_MAX;
	}
	*out = result;
	return e;
}

/* An operand's number in [min, max]; *bytes (if given) is set when it
 * holds a 'B' anywhere, as GNU dd's has_B. */
static int
number_operand(const char *v, uint64_t *out, bool *bytes, int64_t min,
	       int64_t max)
{
	int64_t n;
	int e = parse_integer(v, &n);

	if (bytes != NULL)
		*bytes = strchr(v, 'B') != NULL;
	if (n < min)
		e = NUM_INVALID;
	else if (n > max)
		e = NUM_OVERFLOW;
	if (e == NUM_OVERFLOW)
		return usage_error("invalid number: %s: %s", dd_quote(v),
				   "Value too large for defined data type");
	if (e != 0)
		return usage_error("invalid number: %s%s", dd_quote(v), "");
	*out = (uint64_t)n;
	return 0;
}

/* ------------------------------------------------------------ lists */

struct symbol {
	const char *name;
	unsigned bits;
};

static const struct symbol conversions[] = {
	{ "ascii", CONV_ASCII | CONV_UNBLOCK | CONV_TWOBUFS },
	{ "ebcdic", CONV_EBCDIC | CONV_BLOCK | CONV_TWOBUFS },
	{ "ibm", CONV_IBM | CONV_BLOCK | CONV_TWOBUFS },
	{ "block", CONV_BLOCK | CONV_TWOBUFS },
	{ "unblock", CONV_UNBLOCK | CONV_TWOBUFS },
	{ "lcase", CONV_LCASE | CONV_TWOBUFS },
	{ "ucase", CONV_UCASE | CONV_TWOBUFS },
	{ "sparse", CONV_SPARSE },
	{ "swab", CONV_SWAB | CONV_TWOBUFS },
	{ "sync", CONV_SYNC },
	{ "excl", CONV_EXCL },
	{ "nocreat", CONV_NOCREAT },
	{ "notrunc", CONV_NOTRUNC },
	{ "noerror", CONV_NOERROR },
	{ "fdatasync", CONV_FDATASYNC },
	{ "fsync", CONV_FSYNC },
	{ NULL, 0 }
};

static const struct symbol flags[] = {
	{ "append", FLAG_APPEND },
	{ "direct", FLAG_DIRECT },
	{ "directory", FLAG_DIRECTORY },
	{ "dsync", FLAG_DSYNC },
	{ "sync", FLAG_SYNC },
	{ "fullblock", FLAG_FULLBLOCK },
	{ "nonblock", FLAG_NONBLOCK },
	{ "noatime", FLAG_NOATIME },
	{ "nocache", FLAG_NOCACHE },
	{ "noctty", FLAG_NOCTTY },
	{ "nofollow", FLAG_NOFOLLOW },
	{ "count_bytes", FLAG_COUNT_BYTES },
	{ "skip_bytes", FLAG_SKIP_BYTES },
	{ "seek_bytes", FLAG_SEEK_BYTES },
	{ NULL, 0 }
};

static const struct symbol statuses[] = {
	{ "none", ST_NONE },
	{ "noxfer", ST_NOXFER },
	{ "progress", ST_PROGRESS },
	{ NULL, 0 }
};

/* GNU's parse_symbols: a comma-separated list, the values or'ed, or
 * (exclusive: status=) the last one taken */
static int
parse_symbols(const char *v, const struct symbol *table, const char *what,
	      bool exclusive, unsigned *bits)
{
	const char *p = v;

	for (;;) {
		size_t n = strcspn(p, ",");
		const struct symbol *s;

		for (s = table; s->name; s++)
			if (strlen(s->name) == n && strncmp(s->name, p, n) == 0)
				break;
		if (s->name == NULL) {
			char *name = strndup(p, n);
			int r = usage_error("invalid %s: %s", what,
					    name ? dd_quote(name) : "");
			free(name);
			return r;
		}
		*bits = exclusive ? s->bits : *bits | s->bits;
		if (p[n] == '\0')
			return 0;
		p += n + 1;
	}
}

/* ------------------------------------------------------------ operands */

struct raw {
	uint64_t bs, ibs, obs, cbs, skip, seek, count;
	bool skip_b, seek_b, count_b;
};

static int
parse_operand(struct dd *dd, struct raw *raw, const char *arg)
{
	const char *eq = strchr(arg, '=');
	const char *v;
	char key[16];

	if (eq == NULL || (size_t)(eq - arg) >= sizeof(key))
		return usage_error("unrecognized operand %s%s", dd_quote(arg), "");
	memcpy(key, arg, (size_t)(eq - arg));
	key[eq - arg] = '\0';
	v = eq + 1;
	if (strcmp(key, "if") == 0 || strcmp(key, "of") == 0) {
		if (key[0] == 'i')
			dd->in.spec = v;
		else
			dd->out.spec = v;
		return 0;
	}
	/* GNU's limits: a block size fits a buffer one byte larger (swab) */
	if (strcmp(key, "bs") == 0)
		return number_operand(v, &raw->bs, NULL, 1, INT64_MAX - 1);
	if (strcmp(key, "ibs") == 0)
		return number_operand(v, &raw->ibs, NULL, 1, INT64_MAX - 1);
	if (strcmp(key, "obs") == 0)
		return number_operand(v, &raw->obs, NULL, 1, INT64_MAX - 1);
	if (strcmp(key, "cbs") == 0)
		return number_operand(v, &raw->cbs, NULL, 1, INT64_MAX);
	if (strcmp(key, "skip") == 0 || strcmp(key, "iseek") == 0)
		return number_operand(v, &raw->skip, &raw->skip_b, 0, INT64_MAX);
	if (strcmp(key, "seek") == 0 || strcmp(key, "oseek") == 0)
		return number_operand(v, &raw->seek, &raw->seek_b, 0, INT64_MAX);
	if (strcmp(key, "count") == 0) {
		dd->have_count = true;
		return number_operand(v, &raw->count, &raw->count_b, 0, INT64_MAX);
	}
	if (strcmp(key, "conv") == 0)
		return parse_symbols(v, conversions, "conversion", false, &dd->conv);
	if (strcmp(key, "iflag") == 0)
		return parse_symbols(v, flags, "input flag", false, &dd->in.flags);
	if (strcmp(key, "oflag") == 0)
		return parse_symbols(v, flags, "output flag", false, &dd->out.flags);
	if (strcmp(key, "status") == 0) {
		unsigned level = dd->status;
		int r = parse_symbols(v, statuses, "status level", true, &level);

		dd->status = (enum dd_status)level;
		return r;
	}
	return usage_error("unrecognized operand %s%s", dd_quote(arg), "");
}

/* --key=value or --key value; returns the arguments used, or -EX_USAGE
 * (or -1 after --help/--version, which succeed). */
static int
parse_option(struct dd *dd, int argc, char **argv, int i)
{
	const char *arg = argv[i] + 2, *eq = strchr(arg, '=');
	struct clio_conf scratch = dd->conf;
	char key[64], err[256];
	const char *v;
	int used = 1;

	if (strcmp(arg, "json") == 0) {
		dd->json = true;
		return 1;
	}
	/* getopt's abbreviations of GNU dd's own two options */
	if (*arg != '\0' && eq == NULL && strncmp(arg, "help", strlen(arg)) != 0 &&
	    strncmp(arg, "version", strlen(arg)) != 0)
		; /* neither */
	else if (*arg != '\0' && eq == NULL &&
		 clio_conf_set(&scratch, arg, "0", err, sizeof(err)) < 0 &&
		 strncmp(err, "unknown option", 14) == 0)
		arg = *arg == 'h' ? "help" : "version";
	if (strcmp(arg, "help") == 0) {
		dd_usage(stdout);
		return -1;
	}
	if (strcmp(arg, "version") == 0) {
		printf("clio %s\n", CLIO_VERSION);
		return -1;
	}
	snprintf(key, sizeof(key), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg),
		 arg);
	/* a name clio does not know is unknown, with a value or without */
	if (strcmp(key, "iostat") != 0 &&
	    clio_conf_set(&scratch, key, "0", err, sizeof(err)) < 0 &&
	    strncmp(err, "unknown option", 14) == 0) {
		usage_error("unrecognized option '%s'%s", argv[i], "");
		return -EX_USAGE;
	}
	if (eq != NULL) {
		v = eq + 1;
	} else {
		if (i + 1 >= argc) {
			usage_error("option '--%s' needs a value%s", arg, "");
			return -EX_USAGE;
		}
		v = argv[i + 1];
		used = 2;
	}
	if (strcmp(key, "iostat") == 0) {
		if (parse_double(v, &dd->iostat) < 0 || dd->iostat <= 0) {
			usage_error("invalid --iostat interval '%s'%s", v, "");
			return -EX_USAGE;
		}
		return used;
	}
	if (clio_conf_set(&dd->conf, key, v, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio dd: %s\n", err);
		return -EX_USAGE;
	}
	return used;
}

static int
exclusive(unsigned bits, unsigned a, unsigned b, const char *what)
{
	if ((bits & a) && (bits & b)) {
		fprintf(stderr, "clio dd: cannot combine %s\n", what);
		return EX_USAGE;
	}
	return 0;
}

/* GNU dd's checks and derivations once every operand is read. */
static int
settle(struct dd *dd, struct raw *raw)
{
	unsigned c;
	int r;

	if (dd->out.flags & FLAG_FULLBLOCK) /* before the exclusions, as GNU's */
		return usage_error("invalid output flag: %s%s", dd_quote("fullblock"), "");
	if (raw->cbs == 0) /* block and unblock need cbs= */
		dd->conv &= ~(unsigned)(CONV_BLOCK | CONV_UNBLOCK);
	c = dd->conv;

	if (__builtin_popcount(c & (CONV_ASCII | CONV_EBCDIC | CONV_IBM)) > 1)
		return usage_error("cannot combine any two of {ascii,ebcdic,ibm}%s%s",
				   "", "");
	if ((r = exclusive(c, CONV_BLOCK, CONV_UNBLOCK, "block and unblock")) ||
	    (r = exclusive(c, CONV_LCASE, CONV_UCASE, "lcase and ucase")) ||
	    (r = exclusive(c, CONV_EXCL, CONV_NOCREAT, "excl and nocreat")) ||
	    (r = exclusive(dd->in.flags, FLAG_DIRECT, FLAG_NOCACHE,
			   "direct and nocache")) ||
	    (r = exclusive(dd->out.flags, FLAG_DIRECT, FLAG_NOCACHE,
			   "direct and nocache")))
		return r;
	if (raw->bs) {
		dd->ibs = dd->obs = raw->bs;
	} else {
		/* POSIX: without bs=, output is gathered into obs blocks */
		dd->conv |= CONV_TWOBUFS;
		if (raw->ibs)
			dd->ibs = raw->ibs;
		if (raw->obs)
			dd->obs = raw->obs;
	}
	dd->cbs = raw->cbs;
	if (raw->count_b || (dd->in.flags & FLAG_COUNT_BYTES)) {
		dd->max_records = raw->count / dd->ibs;
		dd->max_bytes = raw->count % dd->ibs;
	} else {
		dd->max_records = raw->count;
	}
	/* an offset past 2^63-1 fails at the seek, as GNU dd's */
	if (raw->skip_b || (dd->in.flags & FLAG_SKIP_BYTES))
		dd->skip = raw->skip;
	else if (raw->skip != 0 && dd->ibs > INT64_MAX / raw->skip)
		dd->skip = DD_OFF_OVERFLOW;
	else
		dd->skip = raw->skip * dd->ibs;
	dd->seek_arg = raw->seek;
	if (raw->seek_b || (dd->out.flags & FLAG_SEEK_BYTES))
		dd->seek = raw->seek;
	else if (raw->seek != 0 && dd->obs > INT64_MAX / raw->seek)
		dd->seek = DD_OFF_OVERFLOW;
	else
		dd->seek = raw->seek * dd->obs;
	if ((dd->out.flags & FLAG_APPEND) && !(dd->conv & CONV_NOTRUNC))
		fprintf(stderr, "clio dd: you probably want conv=notrunc with "
				"oflag=append\n");
	return 0;
}

/* Returns 0, EX_USAGE, or -1 after --help or --version (exit 0).  As
 * GNU dd's getopt: the options first, wherever they stand before a "--",
 * then the operands in order. */
int
dd_parse(struct dd *dd, int argc, char **argv)
{
	struct raw raw;
	char *operand = calloc((size_t)argc + 1, 1);
	int i, r = 0;

	if (operand == NULL) {
		fprintf(stderr, "clio dd: %s\n", strerror(ENOMEM));
		return EX_OSERR;
	}
	memset(&raw, 0, sizeof(raw));
	for (i = 1; i < argc && r == 0;) {
		if (strcmp(argv[i], "--") == 0) {
			for (i++; i < argc; i++)
				operand[i] = 1;
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			r = parse_option(dd, argc, argv, i);
			if (r < 0)
				r = r == -1 ? -1 : -r;
			else
				i += r, r = 0;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "clio dd: invalid option -- '%c'\n", argv[i][1]);
			r = EX_USAGE;
		} else {
			operand[i++] = 1;
		}
	}
	for (i = 1; i < argc && r == 0; i++)
		if (operand[i])
			r = parse_operand(dd, &raw, argv[i]);
	free(operand);
	return r != 0 ? r : settle(dd, &raw);
}
