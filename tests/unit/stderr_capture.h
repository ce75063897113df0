/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the code under test writes to stderr (vcxl_log's lines), caught in
 * an unlinked temporary file: stderr_capture() redirects, stderr_release()
 * restores stderr and hands the file back, stderr_lines() counts its lines.
 */
#ifndef VCXL_TESTS_STDERR_CAPTURE_H
#define VCXL_TESTS_STDERR_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct stderr_capture {
	int fd, saved;
};

/* 0, or -1 (stderr left as it was) */
static inline int stderr_capture(struct stderr_capture *c)
{
	char path[] = "/tmp/vcxl-stderr-XXXXXX";

	c->saved = -1;
	c->fd = mkstemp(path);
	if (c->fd < 0)
		return -1;
	unlink(path);
	fflush(stderr);
	c->saved = dup(2);
	if (c->saved < 0) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	dup2(c->fd, 2);
	return 0;
}

/* stderr back; what it caught (fclose it), or NULL */
static inline FILE *stderr_release(struct stderr_capture *c)
{
	FILE *f;

	if (c->fd < 0)
		return NULL;
	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	f = fdopen(c->fd, "r");
	if (!f)
		close(c->fd);
	c->fd = -1;
	return f;
}

/* Lines of f holding needle (NULL: every line), from its start */
static inline int stderr_lines(FILE *f, const char *needle)
{
	char line[1200];
	int n = 0;

	if (!f)
		return -1;
	rewind(f);
	while (fgets(line, sizeof(line), f))
		n += !needle || strstr(line, needle) != NULL;
	return n;
}

#endif
