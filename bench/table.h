/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table.h - result tables for `clio bench`: a title, named columns and
 * rows of numbers or strings (a missing value prints as "-" and as JSON
 * null), rendered as text or JSON.
 */
#ifndef CLIO_TABLE_H
#define CLIO_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#define TABLE_COLS 20
#define TABLE_ROWS 64

struct table_col {
	const char *key;  /* JSON key */
	const char *head; /* text header */
	int prec;	  /* decimals; -1: a string column */
};

struct table_cell {
	bool set;
	double v;
	char s[64];
};

struct table {
	const char *name, *title;
	char note[4096];
	int ncols, nrows;
	struct table_col cols[TABLE_COLS];
	struct table_cell cells[TABLE_ROWS][TABLE_COLS];
};

void table_init(struct table *t, const char *name, const char *title);
void table_col(struct table *t, const char *key, const char *head, int prec);
int table_row(struct table *t); /* a new row; returns its index */
void table_num(struct table *t, int row, const char *key, double v);
void table_str(struct table *t, int row, const char *key, const char *s);
bool table_get(const struct table *t, int row, const char *key, double *v);
void table_print(const struct table *t, FILE *fp);
void table_json(const struct table *t, FILE *fp);

#endif
