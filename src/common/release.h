/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Letting go of a memory object off the caller's thread. The last close of a
 * memfd frees its pages in the kernel (about 70 ms per GiB here): a server
 * that replaces a departed tenant's memory must not spend that on its event
 * loop. vcxl_release_fd() closes fd on a short-lived detached thread (or
 * here, if no thread can be made); what happens to the pages is the same.
 */
#ifndef VCXL_RELEASE_H
#define VCXL_RELEASE_H

/* Close fd (owned by the call) on another thread; fd < 0 is ignored. */
void vcxl_release_fd(int fd);

/* Wait (at most timeout_ms) until every fd given to vcxl_release_fd is
 * closed: for checks that count open fds (tests, the fuzz oracle). 0, or
 * -ETIMEDOUT. */
int vcxl_release_wait(int timeout_ms);

#endif /* VCXL_RELEASE_H */
