/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table.c - text and JSON renderings of bench result tables.
 * Invariant: a cell is printed only if set; column widths fit the widest
 * header or value.
 */
#include <math.h>
#include <string.h>

#include "cli.h"
#include "table.h"

void
table_init(struct table *t, const char *name, const char *title)
{
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->title = title;
}

void
table_col(struct table *t, const char *key, const char *head, int prec)
{
	if (t->ncols == TABLE_COLS)
		return;
	t->cols[t->ncols].key = key;
	t->cols[t->ncols].head = head;
	t->cols[t->ncols].prec = prec;
	t->ncols++;
}

int
table_row(struct table *t)
{
	return t->nrows < TABLE_ROWS ? t->nrows++ : TABLE_ROWS - 1;
}

static int
col_of(const struct table *t, const char *key)
{
	int i;

	for (i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i].key, key) == 0)
			return i;
	return -1;
}

void
table_num(struct table *t, int row, const char *key, double v)
{
	int c = col_of(t, key);

	if (c < 0 || !isfinite(v))
		return;
	t->cells[row][c].set = true;
	t->cells[row][c].v = v;
}

void
table_str(struct table *t, int row, const char *key, const char *s)
{
	int c = col_of(t, key);

	if (c < 0)
		return;
	t->cells[row][c].set = true;
	snprintf(t->cells[row][c].s, sizeof(t->cells[row][c].s), "%s", s);
}

bool
table_get(const struct table *t, int row, const char *key, double *v)
{
	int c = col_of(t, key);

	if (c < 0 || !t->cells[row][c].set || t->cols[c].prec < 0)
		return false;
	*v = t->cells[row][c].v;
	return true;
}

static void
cell_text(const struct table *t, int r, int c, char *out, size_t len)
{
	const struct table_cell *x = &t->cells[r][c];

	if (!x->set)
		snprintf(out, len, "-");
	else if (t->cols[c].prec < 0)
		snprintf(out, len, "%s", x->s);
	else
		snprintf(out, len, "%.*f", t->cols[c].prec, x->v);
}

void
table_print(const struct table *t, FILE *fp)
{
	int w[TABLE_COLS], r, c;
	char buf[64];

	for (c = 0; c < t->ncols; c++) {
		w[c] = (int)strlen(t->cols[c].head);
		for (r = 0; r < t->nrows; r++) {
			cell_text(t, r, c, buf, sizeof(buf));
			if ((int)strlen(buf) > w[c])
				w[c] = (int)strlen(buf);
		}
	}
	fprintf(fp, "%s\n", t->title);
	for (c = 0; c < t->ncols; c++)
		fprintf(fp, c ? "  %*s" : "  %-*s", w[c], t->cols[c].head);
	fputc('\n', fp);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			cell_text(t, r, c, buf, sizeof(buf));
			fprintf(fp, c ? "  %*s" : "  %-*s", w[c], buf);
		}
		fputc('\n', fp);
	}
	if (t->note[0])
		fprintf(fp, "%s\n", t->note);
	fputc('\n', fp);
}

void
table_json(const struct table *t, FILE *fp)
{
	int r, c;

	fprintf(fp, "{\"experiment\": ");
	json_string(fp, t->name);
	fprintf(fp, ", \"title\": ");
	json_string(fp, t->title);
	fprintf(fp, ", \"note\": ");
	json_string(fp, t->note);
	fprintf(fp, ", \"rows\": [");
	for (r = 0; r < t->nrows; r++) {
		fprintf(fp, "%s{", r ? ", " : "");
		for (c = 0; c < t->ncols; c++) {
			const struct table_cell *x = &t->cells[r][c];
			fprintf(fp, "%s", c ? ", " : "");
			json_string(fp, t->cols[c].key);
			fprintf(fp, ": ");
			if (!x->set)
				fprintf(fp, "null");
			else if (t->cols[c].prec < 0)
				json_string(fp, x->s);
			else
				fprintf(fp, "%.6g", x->v);
		}
		fprintf(fp, "}");
	}
	fprintf(fp, "]}");
}
