/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Letting go of a memory object off the caller's thread. Freeing a memfd's
 * pages costs about 70 ms per GiB here: a server that replaces a departed
 * tenant's memory must not spend that on its event loop.
 * vcxl_release_memory() empties the file (a hole punched over all of it)
 * and closes it on a short-lived detached thread (or here, if no thread can
 * be made). Emptying, not only closing: a client may keep the object mapped
 * after it left, and must not pin the server's memory with it, tenant after
 * tenant; its mapping then reads zeros.
 */
#ifndef VCXL_RELEASE_H
#define VCXL_RELEASE_H

/* Punch all of fd's file and close fd (owned by the call), on another
 * thread; fd < 0 is ignored. Only for a memory object the caller made and
 * no longer uses. */
void vcxl_release_memory(int fd);

/* Wait (at most timeout_ms) until every fd given to vcxl_release_memory is
 * closed: for checks that count open fds (tests, the fuzz oracle). 0, or
 * -ETIMEDOUT. */
int vcxl_release_wait(int timeout_ms);

#endif /* VCXL_RELEASE_H */
