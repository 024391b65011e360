/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier.h - the disk tier (lib/dev/tier.c): a persistent, checksummed cache of a
 * device's blocks in a local directory (conf disk_cache=DIR), between the
 * memory cache and the device.  It sits in the device layer: once
 * attached, every request to the device goes through tier_submit().
 */
#ifndef CLIO_TIER_H
#define CLIO_TIER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clio.h"

struct tier;
struct dev_params;

/* crc32c.c: CRC-32C, seeded with the previous value (0 to start);
 * crc32c_table always takes the portable path (for the unit test). */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t crc32c_table(uint32_t crc, const void *buf, size_t len);

/* A flag of a request the tier makes to its device: not through the tier
 * again (dev.c). */
#define DEV_REQ_TIER 0x8000

/* Attach the tier of conf (conf->disk_cache) to d if it has none: opens
 * or creates the object's entries, checks them against the device
 * (validator, sample), recovers what a crash left.  0 also when the tier
 * does not apply (a virtual-clock device, entries in use by another
 * process); -errno on failure.  (file.c: clio_open) */
int tier_attach(clio_dev *d, const struct clio_conf *conf);
/* Run req through the tier (dev.c: clio_dev_submit).  Same contract. */
int tier_submit(struct tier *t, clio_dev *d, struct clio_req *req);
/* Write back, record, close and free d's tier (dev.c: clio_dev_close);
 * returns the first error. */
int tier_detach(clio_dev *d);
/* The tier's parameters and statistics, disk_cache.* (clio_dev_params). */
void tier_params(struct tier *t, struct dev_params *o);
/* The source changed (clio_revalidate found another version): drop every
 * clean entry of d. */
void tier_drop(clio_dev *d);
/* The caller's own change moved d's version (clio_validator_set: a
 * mount set the file's times): record it as the entries', dropping
 * nothing, unless a write of the tier's own is yet to be recorded. */
void tier_settle(clio_dev *d);
/* d takes a new size (dev.c: clio_dev_resize): before, a dirty block the
 * new end cuts goes to the device; after, the blocks past it go. */
int tier_resize(clio_dev *d, uint64_t size, bool before);

/* For the unit test: the insertion queue's bound in bytes (max > 0),
 * the filler paused (pause 1) or going (0; -1 leaves it); and wait until
 * the queue is empty. */
void tier_fill_ctl(clio_dev *d, size_t max, int pause);
void tier_fill_wait(clio_dev *d);

#endif
