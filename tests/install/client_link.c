// SPDX-License-Identifier: BSD-3-Clause
/* Built by test-install.sh against the installed <vcxl/client.h> and
 * libvcxl-client (pkg-config vcxl-client): GET_INFO on a socket. */
#include <stdio.h>
#include <string.h>
#include <vcxl/client.h>

int main(int argc, char **argv)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	int rc;

	if (argc != 2)
		return 2;
	rc = vcxl_client_connect(argv[1], &c);
	if (rc) {
		fprintf(stderr, "connect: %s\n", strerror(-rc));
		return 1;
	}
	rc = vcxl_client_get_info(c, &info);
	if (!rc)
		printf("regions %u irqs %u cxl %d hdm_count %u\n", info.num_regions, info.num_irqs,
		       info.has_cxl, info.cxl.hdm_count);
	vcxl_client_close(c);
	return rc ? 1 : 0;
}
