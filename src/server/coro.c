// SPDX-License-Identifier: BSD-3-Clause
/*
 * A minimal coroutine (ucontext) per connection: a request handler that must
 * wait for its client (server->client DMA) yields back to the event loop,
 * which serves every other device meanwhile and resumes the handler when the
 * reply, an error or the deadline arrives. One thread, so the device code
 * stays synchronous and nothing runs concurrently with it.
 *
 * Under AddressSanitizer the stack switches are announced
 * (__sanitizer_start/finish_switch_fiber), as the sanitizer requires.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "coro.h"

#if defined(__SANITIZE_ADDRESS__)
#define CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#endif
#ifdef CORO_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* Handlers and device jobs keep 64 KiB buffers on the stack; sanitizers
 * enlarge frames. Pages are touched only as used. */
#define CORO_STACK (1u << 20)

struct coro {
	ucontext_t ctx, caller;
	uint8_t *map; /* guard page + stack */
	size_t map_len;
	void (*fn)(void *);
	void *arg;
	bool running, done;
	void *fake_stack; /* ASan bookkeeping */
	const void *caller_bottom;
	size_t caller_size;
};

static void switch_begin(struct coro *co, void **fake, const void *bottom, size_t size)
{
#ifdef CORO_ASAN
	__sanitizer_start_switch_fiber(fake, bottom, size);
#else
	(void)co, (void)fake, (void)bottom, (void)size;
#endif
}

static void switch_end(struct coro *co, void *fake, const void **bottom, size_t *size)
{
#ifdef CORO_ASAN
	__sanitizer_finish_switch_fiber(fake, bottom, size);
#else
	(void)co, (void)fake, (void)bottom, (void)size;
#endif
}

/* makecontext passes ints: the pointer in two halves. */
static void coro_trampoline(unsigned lo, unsigned hi)
{
	struct coro *co = (struct coro *)(((uintptr_t)hi << 32) | (uintptr_t)lo);

	switch_end(co, NULL, &co->caller_bottom, &co->caller_size);
	co->fn(co->arg);
	co->done = true;
	co->running = false;
	/* this stack is finished with: no fake frames to keep */
	switch_begin(co, NULL, co->caller_bottom, co->caller_size);
	swapcontext(&co->ctx, &co->caller);
}

int coro_create(struct coro **out)
{
	struct coro *co = calloc(1, sizeof(*co));
	long pg = sysconf(_SC_PAGESIZE);

	if (!co)
		return -ENOMEM;
	co->map_len = CORO_STACK + (size_t)pg;
	co->map = mmap(NULL, co->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (co->map == MAP_FAILED) {
		free(co);
		return -ENOMEM;
	}
	mprotect(co->map, (size_t)pg, PROT_NONE); /* overflow faults, never corrupts */
	co->done = true;
	*out = co;
	return 0;
}

void coro_destroy(struct coro *co)
{
	if (!co)
		return;
	munmap(co->map, co->map_len);
	free(co);
}

/* Switch from the caller into the coroutine until it yields or finishes. */
static bool coro_enter(struct coro *co)
{
	void *fake = NULL;
	long pg = sysconf(_SC_PAGESIZE);

	co->running = true;
	switch_begin(co, &fake, co->map + pg, co->map_len - (size_t)pg);
	swapcontext(&co->caller, &co->ctx);
	switch_end(co, fake, NULL, NULL);
	co->running = false;
	return co->done;
}

bool coro_start(struct coro *co, void (*fn)(void *), void *arg)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t p = (uintptr_t)co;

	if (!co->done)
		return false; /* still suspended: resume it instead */
	co->fn = fn;
	co->arg = arg;
	co->done = false;
	getcontext(&co->ctx);
	co->ctx.uc_stack.ss_sp = co->map + pg;
	co->ctx.uc_stack.ss_size = co->map_len - (size_t)pg;
	co->ctx.uc_link = NULL;
	makecontext(&co->ctx, (void (*)(void))coro_trampoline, 2, (unsigned)(p & 0xffffffffu),
		    (unsigned)(p >> 32));
	return coro_enter(co);
}

bool coro_resume(struct coro *co)
{
	if (co->done)
		return true;
	return coro_enter(co);
}

void coro_yield(struct coro *co)
{
	switch_begin(co, &co->fake_stack, co->caller_bottom, co->caller_size);
	swapcontext(&co->ctx, &co->caller);
	switch_end(co, co->fake_stack, &co->caller_bottom, &co->caller_size);
}

bool coro_running(const struct coro *co)
{
	return co && co->running;
}

bool coro_suspended(const struct coro *co)
{
	return co && !co->done && !co->running;
}
