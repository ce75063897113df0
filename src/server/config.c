// SPDX-License-Identifier: BSD-3-Clause
/* vcxl-server --config FILE: the options a file holds, as if given first on
 * the command line (the systemd unit reads /etc/vcxl/<instance>.conf). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/errmsg.h"
#include "config.h"

struct args {
	char **v;
	int n, cap;
};

static int push(struct args *a, const char *s, size_t len)
{
	if (a->n + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		char **v = realloc(a->v, (size_t)cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n] = strndup(s, len);
	if (!a->v[a->n])
		return -ENOMEM;
	a->v[++a->n] = NULL;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* One line: "key", "key value" or "key = value" -> "--key" or "--key=value",
 * always one element: a bare key that needs a value then cannot take the
 * next option as its value (main.c's parse_args refuses it). */
static int parse_line(struct args *a, char *line, const char *path, unsigned no, char *err,
		      size_t errlen)
{
	char *hash = strchr(line, '#'), *key, *val, *sep;
	char opt[2 * VCXL_CONFIG_LINE_MAX + 4];
	int rc;

	if (hash)
		*hash = 0;
	key = trim(line);
	if (!*key)
		return 0;
	sep = key + strcspn(key, " \t=");
	val = trim(sep + (*sep ? 1 : 0));
	*sep = 0;
	if (*val == '=')
		val = trim(val + 1);
	if (key[0] == '-')
		return vcxl_errf(err, errlen, -EINVAL,
				 "%s:%u: '%s': write options without the leading dashes", path, no,
				 key);
	for (const char *p = key; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-')
			return vcxl_errf(err, errlen, -EINVAL, "%s:%u: '%s' is not an option name",
					 path, no, key);
	snprintf(opt, sizeof(opt), "--%s%s%s", key, *val ? "=" : "", val);
	if ((rc = push(a, opt, strlen(opt))))
		return vcxl_errf(err, errlen, rc, "out of memory");
	return 0;
}

static int read_file(struct args *a, const char *path, char *err, size_t errlen)
{
	char line[VCXL_CONFIG_LINE_MAX + 2];
	unsigned no = 0;
	int rc = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return vcxl_errf(err, errlen, -errno, "config file %s: %s", path, strerror(errno));
	while (!rc && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		no++;
		if (len > VCXL_CONFIG_LINE_MAX && line[len - 1] != '\n') {
			rc = vcxl_errf(err, errlen, -E2BIG, "%s:%u: line longer than %d bytes",
				       path, no, VCXL_CONFIG_LINE_MAX);
			break;
		}
		rc = parse_line(a, line, path, no, err, errlen);
	}
	if (!rc && ferror(f))
		rc = vcxl_errf(err, errlen, -EIO, "config file %s: read error", path);
	fclose(f);
	return rc;
}

void vcxl_config_free(char **argv, char **expanded)
{
	if (!expanded || expanded == argv)
		return;
	for (char **p = expanded; *p; p++)
		free(*p);
	free(expanded);
}

int vcxl_config_expand(int argc, char **argv, const char *path, int *out_argc, char ***out_argv,
		       int *file_end, char *err, size_t errlen)
{
	struct args a = {0};
	int rc;

	if ((rc = push(&a, argv[0], strlen(argv[0]))) || (rc = read_file(&a, path, err, errlen)))
		goto fail;
	*file_end = a.n;
	for (int i = 1; i < argc; i++)
		if ((rc = push(&a, argv[i], strlen(argv[i]))))
			goto fail;
	*out_argc = a.n;
	*out_argv = a.v;
	return 0;
fail:
	if (rc == -ENOMEM)
		vcxl_errf(err, errlen, rc, "out of memory");
	vcxl_config_free(argv, a.v);
	return rc;
}
