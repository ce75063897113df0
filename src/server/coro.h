/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to src/server: a coroutine for a request handler that waits (coro.c). */
#ifndef VCXL_SERVER_CORO_H
#define VCXL_SERVER_CORO_H

#include <stdbool.h>
#include <stdint.h>

struct coro;
int coro_create(struct coro **out);
void coro_destroy(struct coro *co);
/* Run fn(arg) on the coroutine until it finishes (true) or yields (false).
 * Only when the previous run finished. */
bool coro_start(struct coro *co, void (*fn)(void *), void *arg);
/* Continue a yielded run: true once it has finished. */
bool coro_resume(struct coro *co);
/* From inside the run: back to whoever started or resumed it. */
void coro_yield(struct coro *co);
/* The caller is on the coroutine's stack. */
bool coro_running(const struct coro *co);
/* A run has yielded and waits for coro_resume. */
bool coro_suspended(const struct coro *co);

#endif /* VCXL_SERVER_CORO_H */
