// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl: inspect and drive a vcxl (or any vfio-user CXL) device socket. This
 * file parses the command line; each command group has its file (cmd_*.c).
 *   vcxl info SOCKET [--json]        ids, flags, CXL capability, regions, IRQs
 *   vcxl lspci SOCKET                config space decoded like lspci -vvv
 *   vcxl hdm SOCKET [--json]         the virtual HDM decoders (through BAR accesses)
 *   vcxl commit SOCKET --decoder N --base ADDR --size SIZE
 *   vcxl decommit SOCKET --decoder N
 *   vcxl memtest SOCKET [--size SIZE] [--json]
 *   vcxl mbox SOCKET --opcode OP [--in HEX] [--irq] [--timeout MS] [--json]
 *                                    one raw CXL mailbox command (memory devices)
 *   vcxl reset SOCKET
 *   vcxl status [SOCKET | --control PATH] [--json]
 *   vcxl stats [SOCKET | --control PATH] [--json | --prometheus]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "server/server.h"

/* meson passes the project version; a build outside meson (tests/e2e/hw links
 * main.c statically) still compiles */
#ifndef VCXL_VERSION
#define VCXL_VERSION "unknown"
#endif

#define MBOX_TIMEOUT_MS	    5000
#define MBOX_TIMEOUT_MAX_MS 3600000

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: vcxl COMMAND SOCKET [OPTIONS]\n"
		"  info SOCKET [--json]      device flags, CXL capability, regions, IRQs\n"
		"  lspci SOCKET              config space decoded as lspci -vvv does\n"
		"  hdm SOCKET [--json]       virtual HDM decoders (read through BAR accesses)\n"
		"  commit SOCKET --decoder N --base ADDR --size SIZE\n"
		"                            program and commit an HDM decoder like Linux does\n"
		"  decommit SOCKET --decoder N\n"
		"  memtest SOCKET [--size SIZE] [--json]\n"
		"                            pattern test of the CXL region (mmap + REGION_READ);\n"
		"                            progress on a terminal\n"
		"  mbox SOCKET --opcode OP [--in HEX] [--irq] [--timeout MS] [--json]\n"
		"                            one CXL mailbox command (memory device registers);\n"
		"                            --in: input payload bytes in order (\"1122ff\");\n"
		"                            a background command is waited for by polling, or\n"
		"                            with --irq on the mailbox's MSI-X vector\n"
		"                            (default timeout %d ms)\n"
		"  reset SOCKET              DEVICE_RESET\n"
		"  status [SOCKET | --control PATH] [--json]\n"
		"                            the server's state from its control socket\n"
		"                            (SOCKET.ctl): the client attached, the guest's\n"
		"                            decoders, the host region, counters; works while\n"
		"                            a VM is attached\n"
		"  stats [SOCKET | --control PATH] [--json | --prometheus]\n"
		"                            each device's counters since the server started\n"
		"                            (requests, errors, DMA bytes, interrupts, resets,\n"
		"                            hand-overs, clients) and the current client's share;\n"
		"                            --prometheus: Prometheus' text format\n"
		"  --version                 print the version\n"
		"SIZE and ADDR take K/M/G/T suffixes; OP is 0x4000 or decimal.\n",
		MBOX_TIMEOUT_MS);
}

static int parse_u64(const char *opt, const char *s, uint64_t *v)
{
	if (vcxl_parse_size(s, v))
		return fail("invalid %s '%s'", opt, s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"json", no_argument, NULL, 'j'},	      {"decoder", required_argument, NULL, 'd'},
	    {"base", required_argument, NULL, 'b'},   {"size", required_argument, NULL, 's'},
	    {"opcode", required_argument, NULL, 'o'}, {"in", required_argument, NULL, 'i'},
	    {"irq", no_argument, NULL, 'q'},	      {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},	      {"control", required_argument, NULL, 'K'},
	    {"prometheus", no_argument, NULL, 'P'},   {NULL, 0, NULL, 0},
	};
	const char *cmd, *sock;
	bool json = false, have_dec = false, have_base = false, have_size = false;
	bool have_op = false, irq = false, prometheus = false;
	uint64_t base = 0, size = 0, dec = 0;
	unsigned long opcode = 0, timeout = MBOX_TIMEOUT_MS;
	const char *in_arg = NULL, *control = NULL;
	uint8_t *in = NULL;
	size_t in_len = 0;
	char *end;
	struct ctx x;
	int ch, rc;

	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("vcxl %s\n", VCXL_VERSION);
		return 0;
	}
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	optind = 2;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":jd:b:s:o:i:qt:hK:P", lopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = true;
			break;
		case 'd':
			if (parse_u64("--decoder", optarg, &dec) || dec > 31)
				return fail("invalid --decoder '%s'", optarg);
			have_dec = true;
			break;
		case 'b':
			if (parse_u64("--base", optarg, &base))
				return 1;
			have_base = true;
			break;
		case 's':
			if (parse_u64("--size", optarg, &size))
				return 1;
			have_size = true;
			break;
		case 'o':
			errno = 0;
			opcode = strtoul(optarg, &end,
					 optarg[0] == '0' && (optarg[1] | 0x20) == 'x' ? 16 : 10);
			if (errno || end == optarg || *end || opcode > 0xffff || *optarg == '-')
				return fail("invalid --opcode '%s' (0 to 0xffff)", optarg);
			have_op = true;
			break;
		case 'i':
			in_arg = optarg;
			break;
		case 'q':
			irq = true;
			break;
		case 't':
			errno = 0;
			timeout = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || !timeout ||
			    timeout > MBOX_TIMEOUT_MAX_MS || *optarg == '-')
				return fail("invalid --timeout '%s' (1 to %d ms)", optarg,
					    MBOX_TIMEOUT_MAX_MS);
			break;
		case 'K':
			control = optarg;
			break;
		case 'P':
			prometheus = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			/* one line, not the usage text (getopt's own message is off) */
			if (ch == ':')
				fail("%s: option '%s' needs a value (see vcxl --help)", cmd,
				     argv[optind - 1]);
			else if (optopt)
				fail("%s: unknown option '-%c' (see vcxl --help)", cmd, optopt);
			else
				fail("%s: unknown option '%s' (see vcxl --help)", cmd,
				     argv[optind - 1]);
			return 2;
		}
	}
	if (!strcmp(cmd, "status")) {
		if (optind + (control ? 0 : 1) != argc)
			return fail("status needs SOCKET or --control PATH (one of them)");
		return cmd_status(control ? NULL : argv[optind], control, json);
	}
	if (!strcmp(cmd, "stats")) {
		if (optind + (control ? 0 : 1) != argc)
			return fail("stats needs SOCKET or --control PATH (one of them)");
		if (json && prometheus)
			return fail("stats: --json or --prometheus, not both");
		return cmd_stats(control ? NULL : argv[optind], control,
				 prometheus ? CLI_STATS_PROMETHEUS
				 : json	    ? CLI_STATS_JSON
					    : CLI_STATS_TEXT);
	}
	if (prometheus)
		return fail("%s: --prometheus is for stats", cmd);
	if (control)
		return fail("%s: --control is for status and stats", cmd);
	if (optind >= argc)
		return fail("%s: missing SOCKET", cmd);
	sock = argv[optind];
	if (optind + 1 < argc)
		return fail("%s: unexpected argument '%s'", cmd, argv[optind + 1]);
	if (strcmp(cmd, "info") && strcmp(cmd, "lspci") && strcmp(cmd, "hdm") &&
	    strcmp(cmd, "commit") && strcmp(cmd, "decommit") && strcmp(cmd, "memtest") &&
	    strcmp(cmd, "mbox") && strcmp(cmd, "reset"))
		return fail("unknown command '%s' (see vcxl --help)", cmd);
	if (!strcmp(cmd, "mbox") && !have_op)
		return fail("mbox needs --opcode OP");
	if (in_arg && parse_hex(in_arg, &in, &in_len))
		return 1;
	if (!strcmp(cmd, "commit") && (!have_dec || !have_base || !have_size))
		return fail("commit needs --decoder N --base ADDR --size SIZE");
	if (!strcmp(cmd, "decommit") && !have_dec)
		return fail("decommit needs --decoder N");
	if (ctx_open(&x, sock)) {
		free(in);
		return 1;
	}
	if (!strcmp(cmd, "info"))
		rc = cmd_info(&x, json);
	else if (!strcmp(cmd, "lspci"))
		rc = cmd_lspci(&x);
	else if (!strcmp(cmd, "hdm"))
		rc = cmd_hdm(&x, json);
	else if (!strcmp(cmd, "commit"))
		rc = cmd_commit(&x, (unsigned)dec, base, size);
	else if (!strcmp(cmd, "decommit"))
		rc = cmd_decommit(&x, (unsigned)dec);
	else if (!strcmp(cmd, "memtest"))
		rc = cmd_memtest(&x, have_size ? size : 0, json);
	else if (!strcmp(cmd, "mbox"))
		rc = cmd_mbox(&x, (uint16_t)opcode, in, in_len, irq, (int)timeout, json);
	else {
		rc = vcxl_client_reset(x.c);
		if (rc)
			rc = fail("DEVICE_RESET: %s", strerror(-rc));
		else
			printf("device reset\n");
	}
	vcxl_client_close(x.c);
	free(in);
	return rc;
}
