// SPDX-License-Identifier: BSD-3-Clause
/*
 * A minimal coroutine per connection: a request handler that must wait for
 * its client (server->client DMA) or its device (a blocking reset) yields
 * back to the event loop, which serves every other device meanwhile and
 * resumes the handler when the reply, an error or the deadline arrives. One
 * thread, so the device code stays synchronous and nothing runs concurrently
 * with it.
 *
 * Every config space write and REGION_WRITE_MULTI runs here, so a switch
 * must cost what a function call costs: no system call. glibc's
 * swapcontext/getcontext save and restore the signal mask (rt_sigprocmask,
 * one system call each: 3 per request, 1.5x a raw socket round trip per
 * 4-byte write), and the loop never changes the mask. So on x86-64 a switch
 * saves the callee-saved registers on the old stack and loads the new stack
 * pointer (coro_switch below); elsewhere ucontext remains. The stack is made
 * once (coro_create) and runs a loop, one run per coro_start, so starting a
 * run is one switch too (no getcontext/makecontext per request).
 *
 * Under AddressSanitizer the stack switches are announced
 * (__sanitizer_start/finish_switch_fiber), as the sanitizer requires.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coro.h"

#if defined(__x86_64__) && !defined(VCXL_CORO_UCONTEXT)
#define CORO_ASM 1
#else
#include <ucontext.h>
#endif

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
#ifdef CORO_ASM
	void *sp, *caller_sp; /* saved stack pointers (coro_switch) */
#else
	ucontext_t ctx, caller;
#endif
	uint8_t *map; /* guard page + stack */
	size_t map_len, pg;
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

/* The coroutine's whole life: one run of fn per coro_start, then back to the
 * caller as finished, waiting for the next. */
static void coro_body(struct coro *co)
{
	switch_end(co, NULL, &co->caller_bottom, &co->caller_size);
	for (;;) {
		co->fn(co->arg);
		co->done = true;
		co->running = false;
		coro_yield(co);
	}
}

#ifdef CORO_ASM
/* vcxl_coro_switch(save, to): push the callee-saved registers (SysV x86-64
 * ABI: rbp, rbx, r12-r15), store the stack pointer in *save, take to as the
 * stack pointer, pop that stack's registers and return on it. A new stack's
 * first return lands in vcxl_coro_boot with the coroutine in rbx. */
void vcxl_coro_switch(void **save, void *to);
void vcxl_coro_boot(void);
__asm__(".text\n"
	".globl vcxl_coro_switch\n"
	".hidden vcxl_coro_switch\n"
	".type vcxl_coro_switch, @function\n"
	".p2align 4\n"
	"vcxl_coro_switch:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	".size vcxl_coro_switch, .-vcxl_coro_switch\n"
	".globl vcxl_coro_boot\n"
	".hidden vcxl_coro_boot\n"
	".type vcxl_coro_boot, @function\n"
	".p2align 4\n"
	"vcxl_coro_boot:\n"
	"	.cfi_startproc\n"
	"	.cfi_undefined rip\n" /* the bottom frame: unwinders stop here */
	"	movq %rbx, %rdi\n"
	"	call vcxl_coro_body\n"
	"	ud2\n"
	"	.cfi_endproc\n"
	".size vcxl_coro_boot, .-vcxl_coro_boot\n");

void vcxl_coro_body(struct coro *co);
__attribute__((used)) void vcxl_coro_body(struct coro *co)
{
	coro_body(co);
}

/* The first frame of a new stack as vcxl_coro_switch pops it: r15..r12,
 * rbx = co, rbp = 0, return address vcxl_coro_boot, whose call then finds
 * the stack 16-byte aligned as the ABI requires. */
static void coro_stack_init(struct coro *co)
{
	uintptr_t top = ((uintptr_t)(co->map + co->map_len)) & ~(uintptr_t)15;
	void **f = (void **)(top - 16 - 7 * sizeof(void *));

	for (int i = 0; i < 4; i++)
		f[i] = NULL;
	f[4] = co;
	f[5] = NULL;
	f[6] = (void *)(uintptr_t)vcxl_coro_boot;
	co->sp = f;
}

static void coro_to(struct coro *co)
{
	vcxl_coro_switch(&co->caller_sp, co->sp);
}

static void coro_back(struct coro *co)
{
	vcxl_coro_switch(&co->sp, co->caller_sp);
}
#else
/* makecontext passes ints: the pointer in two halves. */
static void coro_trampoline(unsigned lo, unsigned hi)
{
	coro_body((struct coro *)(((uintptr_t)hi << 32) | (uintptr_t)lo));
}

static void coro_stack_init(struct coro *co)
{
	uintptr_t p = (uintptr_t)co;

	getcontext(&co->ctx);
	co->ctx.uc_stack.ss_sp = co->map + co->pg;
	co->ctx.uc_stack.ss_size = co->map_len - co->pg;
	co->ctx.uc_link = NULL;
	makecontext(&co->ctx, (void (*)(void))coro_trampoline, 2, (unsigned)(p & 0xffffffffu),
		    (unsigned)(p >> 32));
}

static void coro_to(struct coro *co)
{
	swapcontext(&co->caller, &co->ctx);
}

static void coro_back(struct coro *co)
{
	swapcontext(&co->ctx, &co->caller);
}
#endif

int coro_create(struct coro **out)
{
	struct coro *co = calloc(1, sizeof(*co));

	if (!co)
		return -ENOMEM;
	co->pg = (size_t)sysconf(_SC_PAGESIZE);
	co->map_len = CORO_STACK + co->pg;
	co->map = mmap(NULL, co->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (co->map == MAP_FAILED) {
		free(co);
		return -ENOMEM;
	}
	mprotect(co->map, co->pg, PROT_NONE); /* overflow faults, never corrupts */
	coro_stack_init(co);
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

	co->running = true;
	switch_begin(co, &fake, co->map + co->pg, co->map_len - co->pg);
	coro_to(co);
	switch_end(co, fake, NULL, NULL);
	co->running = false;
	return co->done;
}

bool coro_start(struct coro *co, void (*fn)(void *), void *arg)
{
	if (!co->done)
		return false; /* still suspended: resume it instead */
	co->fn = fn;
	co->arg = arg;
	co->done = false;
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
	coro_back(co);
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
