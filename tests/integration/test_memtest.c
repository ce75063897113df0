// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl memtest's feedback with the real binaries: on a terminal (a pty from
 * script(1)) each pass shows progress and throughput on a rewritten line that
 * is cleared at the end; piped, or with --json, there is none (no carriage
 * return, no escape sequence), and --json is one JSON object.
 */
#include <json-c/json.h>

#include "harness.h"
#include "tap.h"

static int run(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t n;
	int st;

	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
	static char out[1 << 16], cmd[1024];
	struct harness h = {.cli = h_cli_bin(argc, argv)};
	const char *args[] = {NULL};
	int rc = h_start(&h, h_server_bin(argc, argv), -1, args);
	struct json_object *j, *v;

	ok(rc == 0, "vcxl-server started");
	snprintf(cmd, sizeof(cmd), "'%s' memtest %s --size 64M 2>&1", h.cli, h.sock);
	rc = run(cmd, out, sizeof(out));
	ok(rc == 0 && !strchr(out, '\r') && !strchr(out, '\033') &&
	       !strncmp(out, "memtest: 64 MiB of region", 25),
	   "piped: exit 0, the result line only, no progress");
	snprintf(cmd, sizeof(cmd), "'%s' memtest %s --size 64M --json 2>&1", h.cli, h.sock);
	rc = run(cmd, out, sizeof(out));
	j = json_tokener_parse(out);
	ok(rc == 0 && j && json_object_object_get_ex(j, "ok", &v) && json_object_get_boolean(v) &&
	       json_object_object_get_ex(j, "mmap_write_mbps", &v) && !strchr(out, '\r'),
	   "--json: one JSON object, ok, throughput, no progress");
	json_object_put(j);
	/* a terminal: script(1) runs the command on a pty */
	snprintf(cmd, sizeof(cmd), "script -qec \"'%s' memtest %s --size 64M\" /dev/null", h.cli,
		 h.sock);
	rc = run(cmd, out, sizeof(out));
	ok(rc == 0 && strstr(out, "\r\033[Kmemtest: pass 1/3 mmap write") &&
	       strstr(out, "memtest: pass 3/3 REGION_READ verify 100%    64/64 MiB") &&
	       strstr(out, "MB/s\r\033[K") && strstr(out, "memtest: 64 MiB of region"),
	   "on a terminal: per-pass progress with MiB and MB/s, cleared, then the result");
	if (rc || !strstr(out, "REGION_READ verify 100%"))
		diag("rc %d: %.300s", rc, strstr(out, "pass 3/3") ? strstr(out, "pass 3/3") : out);
	snprintf(cmd, sizeof(cmd), "script -qec \"'%s' memtest %s --size 64M --json\" /dev/null",
		 h.cli, h.sock);
	rc = run(cmd, out, sizeof(out));
	ok(rc == 0 && !strstr(out, "\033[K") && strstr(out, "\"ok\""),
	   "on a terminal with --json: no progress");
	is(h_stop(&h), 0, "SIGTERM: exit 0");
	h_cleanup(&h);
	return done();
}
