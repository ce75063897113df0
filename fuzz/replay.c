// SPDX-License-Identifier: BSD-3-Clause
/*
 * Corpus replay: runs every file of the given corpus directories (or files)
 * through a harness's LLVMFuzzerTestOneInput, without libFuzzer, so every
 * build (gcc, clang, ASan+UBSan) re-checks the committed seeds and any crash
 * reproducer added to the corpus. An oracle violation aborts (the test
 * fails); otherwise one TAP point per argument.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_harness.h"

#define REPLAY_MAX_INPUT (1u << 20)

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;

	if (!f)
		return -errno;
	buf = malloc(REPLAY_MAX_INPUT);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, REPLAY_MAX_INPUT, f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of dir in name order: count replayed or -errno. */
static int replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0;
	int count = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, sizeof(*names) * (cap = cap ? 2 * cap : 64));

			if (!nn)
				break;
			names = nn;
		}
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (names[i] && replay_file(path) == 0)
			count++;
		free(names[i]);
	}
	free(names);
	return count;
}

int main(int argc, char **argv)
{
	int failed = 0;

	printf("1..%d\n", argc - 1);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		int n;

		if (stat(argv[i], &st)) {
			n = -errno;
		} else if (S_ISDIR(st.st_mode)) {
			n = replay_dir(argv[i]);
			if (n == 0)
				n = -ENOENT; /* an empty corpus is a broken checkout */
		} else {
			n = replay_file(argv[i]) ? -EIO : 1;
		}
		if (n > 0) {
			printf("ok %d - %s: %d inputs replayed, no oracle violation\n", i, argv[i],
			       n);
		} else {
			printf("not ok %d - %s: %s\n", i, argv[i], strerror(-n));
			failed = 1;
		}
		fflush(stdout);
	}
	return failed;
}
