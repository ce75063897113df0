// SPDX-License-Identifier: BSD-3-Clause
/*
 * The rate limit of client-triggered log lines (util.c, issue 21 item 10e):
 * VCXL_LOG_RATE_BURST lines per window and source, the rest counted and
 * reported once when the next window opens; vcxl_log_limited writes at most
 * that many lines to stderr however many a client triggers.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "server/server.h"
#include "unit/stderr_capture.h"

static void test_decision(void)
{
	struct vcxl_ratelimit rl = {0}, other = {0};
	unsigned long report = 1;
	unsigned allowed = 0;

	for (int i = 0; i < 1000; i++)
		allowed += vcxl_ratelimit_allow(&rl, 5000 + i / 2, &report) && !report;
	is(allowed, VCXL_LOG_RATE_BURST, "1,000 lines in 500 ms: %d printed", VCXL_LOG_RATE_BURST);
	ok(vcxl_ratelimit_allow(&other, 5400, &report) && !report,
	   "another source (connection) has its own budget");
	bool again = vcxl_ratelimit_allow(&rl, 5000 + VCXL_LOG_RATE_WINDOW_MS, &report);
	ok(again && report == 1000 - VCXL_LOG_RATE_BURST,
	   "the next window: printed again, %lu suppressed reported first", report);
	ok(vcxl_ratelimit_allow(&rl, 5000 + VCXL_LOG_RATE_WINDOW_MS + 1, &report) && !report,
	   "and reported once");
}

/* vcxl_log_limited's lines on stderr (a temporary file) */
static void test_output(void)
{
	struct vcxl_ratelimit rl = {0};
	struct stderr_capture cap;
	int lines, reports;
	FILE *f;

	if (!ok(stderr_capture(&cap) == 0, "a temporary file for stderr"))
		return;
	vcxl_log_set_level(VCXL_LOG_INFO);
	for (int i = 0; i < 100000; i++)
		vcxl_log_limited(&rl, "dev0", VCXL_LOG_WARN, "dev0: protocol error: bad %d", i);
	vcxl_log_limited(&rl, "dev0", VCXL_LOG_DEBUG, "filtered out, not counted");
	f = stderr_release(&cap);
	lines = stderr_lines(f, NULL);
	reports = stderr_lines(f, "client-triggered messages suppressed");
	if (f)
		fclose(f);
	/* the loop may straddle a window or two on a slow machine */
	ok(lines >= VCXL_LOG_RATE_BURST && lines <= 4 * (VCXL_LOG_RATE_BURST + 1),
	   "100,000 client-triggered warnings: %d lines on stderr (%d reports)", lines, reports);
}

int main(void)
{
	test_decision();
	test_output();
	return done();
}
