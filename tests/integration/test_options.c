// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-server's command line and --config FILE with the real binary: the
 * options a config file holds (and the command line's winning), and bad
 * input -- an unknown option, a missing value, a missing or malformed config
 * file, a socket path that exists and is not a socket -- each refused in one
 * line with a non-zero status before anything is served (no socket, no log).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "tap.h"

static char dir[64];

/* Run the server to completion (for refusals): exit status, output in out. */
static int run(const char *bin, const char *args, char *out, size_t len)
{
	char cmd[2048];
	FILE *f;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "cd '%s' && timeout 10 '%s' %s 2>&1", dir, bin, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Exactly one line, starting "vcxl-server: " and containing needle. */
static bool one_line(const char *out, const char *needle)
{
	const char *nl = strchr(out, '\n');

	return !strncmp(out, "vcxl-server: ", 13) && strstr(out, needle) && nl && !nl[1];
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static bool exists(const char *name)
{
	char p[200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

static void refused(const char *bin, const char *args, const char *needle, const char *what)
{
	char out[4096];
	int rc = run(bin, args, out, sizeof(out));

	ok(rc == 2 && one_line(out, needle) && !exists("dev.sock"),
	   "%s: exit 2, one line (\"%s\"), nothing served", what, needle);
	if (rc != 2 || !one_line(out, needle))
		diag("rc %d, output: %s", rc, out);
}

static void test_refusals(const char *bin)
{
	char path[200], out[256];

	refused(bin, "--socket dev.sock --bogus", "unknown option '--bogus'",
		"unknown long option");
	refused(bin, "--socket dev.sock -Q", "unknown option '-Q'", "unknown short option");
	refused(bin, "--socket", "option '--socket' needs a value", "missing value");
	refused(bin, "--socket dev.sock stray", "unexpected argument 'stray'", "stray argument");
	refused(bin, "--socket dev.sock --config missing.conf",
		"config file missing.conf: No such file or directory", "missing config file");
	write_file(strcat(strcpy(path, dir), "/bad.conf"),
		   "# comment\nmem-size = 1G\n--model type3\n");
	refused(bin, "--socket dev.sock --config bad.conf", "bad.conf:3: '--model'",
		"config line with dashes");
	write_file(strcat(strcpy(path, dir), "/bad2.conf"), "colour = blue\n");
	refused(bin, "--socket dev.sock --config bad2.conf",
		"unknown option '--colour=blue' in bad2.conf", "unknown option in a config file");
	write_file(strcat(strcpy(path, dir), "/bad3.conf"), "mem-size = 300M\n");
	refused(bin, "--socket dev.sock --config bad3.conf", "invalid --mem-size '300M'",
		"bad value in a config file");
	refused(bin, "--socket dev.sock --config bad3.conf --config bad2.conf",
		"--config given twice", "two config files");

	/* a regular file where the socket goes: refused, and left as it was */
	write_file(strcat(strcpy(path, dir), "/notsock"), "keep me\n");
	int rc = run(bin, "--socket notsock", out, sizeof(out));
	FILE *f = fopen(path, "r");
	char keep[16] = "";

	if (f) {
		if (!fgets(keep, sizeof(keep), f))
			keep[0] = 0;
		fclose(f);
	}
	ok(rc == 2 && one_line(out, "notsock exists and is not a socket") &&
	       !strcmp(keep, "keep me\n") && !strstr(out, "host region"),
	   "socket path is a regular file: exit 2, one line, file untouched, no device made");
	if (rc != 2)
		diag("rc %d, output: %s", rc, out);
	unlink(path);
}

/* A start refused after the options were accepted (a device that cannot be
 * opened, a socket another server listens on): its error is the only line on
 * stderr at the default log level, no start-up line before it, no "exited"
 * after it, and nothing is left served. */
static void refused_late(const char *bin, const char *args, const char *needle, const char *what)
{
	char out[4096];
	int rc = run(bin, args, out, sizeof(out));

	ok(rc == 1 && one_line(out, needle) && !exists("late.sock") && !exists("late.sock.ctl"),
	   "%s: exit 1, its error the only line (\"%s\"), nothing left", what, needle);
	if (rc != 1 || !one_line(out, needle))
		diag("rc %d, output: %s", rc, out);
}

static void test_late_refusals(const char *bin)
{
	struct harness h = {0};
	char cmd[400], out[4096];

	refused_late(bin, "--socket late.sock --backend vfio --device 0000:ff:1f.7", "0000:ff:1f.7",
		     "a VFIO device that is not there");
	/* a second server on the socket a first one serves */
	if (h_start(&h, bin, -1, NULL)) {
		ok(0, "a busy socket: the first server started");
		h_cleanup(&h);
		return;
	}
	snprintf(cmd, sizeof(cmd), "--socket '%s' --control late.sock.ctl", h.sock);
	int rc = run(bin, cmd, out, sizeof(out));
	ok(rc == 1 && one_line(out, "another server is listening there") &&
	       !exists("late.sock.ctl"),
	   "a socket another server listens on: exit 1, its error the only line, nothing left");
	if (rc != 1 || !one_line(out, "another server is listening there"))
		diag("rc %d, output: %s", rc, out);
	h_stop(&h);
	h_cleanup(&h);
}

/* The config file's options take effect; the command line's win. */
static void test_config(const char *bin)
{
	struct harness h = {0};
	char conf[200], arg[240];
	const char *args[] = {"--config", arg, "--mem-size", "512M", NULL};

	snprintf(conf, sizeof(conf), "%s/dev.conf", dir);
	write_file(conf, "# a Type-3 expander\n"
			 "model = type3\n"
			 "mem-size 1G   # overridden on the command line\n"
			 "\n"
			 "decoders=2\n");
	snprintf(arg, sizeof(arg), "%s", conf);
	int rc = h_start(&h, bin, -1, args);

	ok(rc == 0, "vcxl-server --config FILE started");
	is(h_log_count(&h, "serving device 0 (8086:0d93, 512 MiB)"), 1,
	   "model from the file, mem-size from the command line");
	is(h_stop(&h), 0, "SIGTERM: exit 0");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
	unlink(conf);
}

/* Every spelling getopt_long accepts for --config reads the file (issue 21,
 * item 9: -C FILE and --conf=FILE served the defaults). */
static void test_config_spellings(const char *bin)
{
	static const char *const spell[][2] = {
	    {"-C", "%s"},     {"-C%s", NULL},	     {"--conf=%s", NULL},
	    {"--conf", "%s"}, {"--config=%s", NULL}, {"--confi", "%s"},
	};
	char conf[200];

	snprintf(conf, sizeof(conf), "%s/spell.conf", dir);
	write_file(conf, "model = type3\nmem-size = 512M\n");
	for (unsigned i = 0; i < sizeof(spell) / sizeof(spell[0]); i++) {
		struct harness h = {0};
		char a0[240], a1[240], shown[480];
		const char *args[] = {a0, spell[i][1] ? a1 : NULL, NULL};

		snprintf(a0, sizeof(a0), spell[i][0], conf);
		if (spell[i][1])
			snprintf(a1, sizeof(a1), spell[i][1], conf);
		snprintf(shown, sizeof(shown), "%.*s%s", (int)strcspn(spell[i][0], "%"),
			 spell[i][0], spell[i][1] ? " FILE" : "FILE");
		int rc = h_start(&h, bin, -1, args);
		ok(rc == 0 && h_log_count(&h, "serving device 0 (8086:0d93, 512 MiB)") == 1,
		   "vcxl-server %s: the file's model and mem-size are served", shown);
		if (rc || tap_failed)
			h_dump_log(&h);
		h_stop(&h);
		h_cleanup(&h);
	}
	unlink(conf);
}

/* A bare key, a config file naming another, two config files however spelt:
 * one line, exit 2. */
static void test_config_refusals(const char *bin)
{
	char path[200];

	write_file(strcat(strcpy(path, dir), "/bare.conf"), "mem-size\n");
	refused(bin, "--socket dev.sock --config bare.conf", "bare.conf: 'mem-size' needs a value",
		"a bare key does not take the next option as its value");
	write_file(strcat(strcpy(path, dir), "/bare2.conf"), "decoders\nmodel = type3\n");
	refused(bin, "--socket dev.sock -C bare2.conf", "bare2.conf: 'decoders' needs a value",
		"a bare key does not take the next line as its value");
	write_file(strcat(strcpy(path, dir), "/nest.conf"), "conf = bare.conf\n");
	refused(bin, "--socket dev.sock -C nest.conf",
		"nest.conf: a config file cannot name another", "'conf' in a config file");
	refused(bin, "--socket dev.sock -C bare.conf --conf=nest.conf", "--config given twice",
		"-C and --conf= together");
	write_file(strcat(strcpy(path, dir), "/unk.conf"), "mem-size = 512M\nflavour = mint\n");
	refused(bin, "--socket dev.sock -C unk.conf", "unknown option '--flavour=mint' in unk.conf",
		"an unknown key with -C");
	refused(bin, "--socket dev.sock --co=x", "unknown option '--co=x'",
		"an ambiguous abbreviation (--config, --control, --comp-at)");
}

/* The vcxl CLI: the same one-line refusals, exit 2 for usage errors. */
static void test_cli(const char *cli)
{
	char cmd[600], out[4096];
	static const struct {
		const char *args, *needle;
	} bad[] = {
	    {"info x.sock --bogus", "vcxl: info: unknown option '--bogus'"},
	    {"hdm x.sock -Z", "vcxl: hdm: unknown option '-Z'"},
	    {"commit x.sock --decoder", "vcxl: commit: option '--decoder' needs a value"},
	};

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", cli, bad[i].args);
		FILE *f = popen(cmd, "r");
		size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
		int st = f ? pclose(f) : -1;
		const char *nl;

		out[n] = 0;
		nl = strchr(out, '\n');
		ok(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, bad[i].needle) && nl &&
		       !nl[1],
		   "vcxl %s: exit 2, one line (%s)", bad[i].args, bad[i].needle);
	}
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);
	char out[256];

	snprintf(dir, sizeof(dir), "/tmp/vcxl-opt-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	ok(run(bin, "--version", out, sizeof(out)) == 0 && !strncmp(out, "vcxl-server ", 12),
	   "--version: %.*s", (int)strcspn(out, "\n"), out);
	test_refusals(bin);
	test_late_refusals(bin);
	test_config(bin);
	test_config_spellings(bin);
	test_config_refusals(bin);
	test_cli(h_cli_bin(argc, argv));
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		diag("could not remove %s", dir);
	return done();
}
