/* SPDX-License-Identifier: BSD-3-Clause */
/* vcxl-server --config FILE: options from a file (config.c). */
#ifndef VCXL_SERVER_CONFIG_H
#define VCXL_SERVER_CONFIG_H

#include <stddef.h>

/* The longest line a config file may have. */
#define VCXL_CONFIG_LINE_MAX 4096

/*
 * The options config file path holds (main.c found it with getopt: -C FILE,
 * -CFILE, --config FILE, --config=FILE, --conf=FILE, ...), as if given first
 * on the command line, so that the command line's win: *out_argv is argv[0],
 * then one element per option of the file ("--key" or "--key=value"), then
 * argv[1..] unchanged; *file_end is the index just past the file's. The file
 * has one option per line as on the command line without the leading "--":
 * "mem-size = 1G", "mem-size 1G" or "firmware-committed"; '#' starts a
 * comment, blank lines are ignored. 0, or -errno with a one-line reason
 * (naming the file and line) in err. *out_argv is freed with
 * vcxl_config_free(argv, *out_argv).
 */
int vcxl_config_expand(int argc, char **argv, const char *path, int *out_argc, char ***out_argv,
		       int *file_end, char *err, size_t errlen);
void vcxl_config_free(char **argv, char **expanded);

#endif /* VCXL_SERVER_CONFIG_H */
