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

#define CONFIG_OPT "--config"

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

/* One line: "key", "key value" or "key = value" -> "--key" [value]. */
static int parse_line(struct args *a, char *line, const char *path, unsigned no, char *err,
		      size_t errlen)
{
	char *hash = strchr(line, '#'), *key, *val, *sep;
	char opt[VCXL_CONFIG_LINE_MAX + 3];
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
	if (!strcmp(key, &CONFIG_OPT[2]))
		return vcxl_errf(err, errlen, -EINVAL, "%s:%u: a config file cannot name another",
				 path, no);
	for (const char *p = key; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-')
			return vcxl_errf(err, errlen, -EINVAL, "%s:%u: '%s' is not an option name",
					 path, no, key);
	snprintf(opt, sizeof(opt), "--%s", key);
	if ((rc = push(a, opt, strlen(opt))) || (*val && (rc = push(a, val, strlen(val)))))
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

int vcxl_config_expand(int argc, char **argv, int *out_argc, char ***out_argv, char *err,
		       size_t errlen)
{
	const char *path = NULL;
	int at = -1, skip = 0, rc;
	struct args a = {0};

	*out_argc = argc;
	*out_argv = argv;
	for (int i = 1; i < argc; i++) {
		const char *p = NULL;
		int k = 0;

		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], CONFIG_OPT)) {
			if (i + 1 >= argc)
				return vcxl_errf(err, errlen, -EINVAL, "--config needs a FILE");
			p = argv[i + 1];
			k = 2;
		} else if (!strncmp(argv[i], CONFIG_OPT "=", sizeof(CONFIG_OPT))) {
			p = argv[i] + sizeof(CONFIG_OPT);
			k = 1;
		}
		if (!p)
			continue;
		if (path)
			return vcxl_errf(err, errlen, -EINVAL, "--config given twice");
		path = p;
		at = i;
		skip = k;
		i += k - 1;
	}
	if (!path)
		return 0;
	if ((rc = push(&a, argv[0], strlen(argv[0]))) || (rc = read_file(&a, path, err, errlen)))
		goto fail;
	for (int i = 1; i < argc; i++) {
		if (i >= at && i < at + skip)
			continue;
		if ((rc = push(&a, argv[i], strlen(argv[i]))))
			goto fail;
	}
	*out_argc = a.n;
	*out_argv = a.v;
	return 0;
fail:
	if (rc == -ENOMEM)
		vcxl_errf(err, errlen, rc, "out of memory");
	vcxl_config_free(argv, a.v);
	return rc;
}
