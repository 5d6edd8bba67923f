// See include/CAllocationCounter.h. Every override forwards to glibc's internal entry points, which glibc exports
// for exactly this purpose, so blocks stay interchangeable with libraries that call glibc directly.
#define _GNU_SOURCE
#include "CAllocationCounter.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <string.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

#define TLS __thread __attribute__((tls_model("initial-exec")))

// Per thread: only the measuring thread counts; other threads (a mosquitto broker reader, the runtime) never do.
static TLS int counting;
static TLS int capturing;
// Set while the counter itself runs (backtrace may call back into malloc): such calls are never counted.
static TLS int busy;
static TLS alloc_counter_totals totals;

// Stacks of the current measurement. Only one thread measures at a time in the check executable.
static void *stacks[ALLOC_COUNTER_MAX_STACKS][ALLOC_COUNTER_STACK_DEPTH];
static int stack_depths[ALLOC_COUNTER_MAX_STACKS];
static int stack_count;

// Frames to drop from a backtrace: `capture` and the allocation function itself.
#define SKIPPED_FRAMES 2

__attribute__((noinline)) static void capture(void) {
    if (!capturing || stack_count >= ALLOC_COUNTER_MAX_STACKS) return;
    void *frames[ALLOC_COUNTER_STACK_DEPTH + SKIPPED_FRAMES];
    busy = 1;
    int depth = backtrace(frames, ALLOC_COUNTER_STACK_DEPTH + SKIPPED_FRAMES);
    busy = 0;
    depth = depth > SKIPPED_FRAMES ? depth - SKIPPED_FRAMES : 0;
    memcpy(stacks[stack_count], frames + SKIPPED_FRAMES, (size_t)depth * sizeof(void *));
    stack_depths[stack_count] = depth;
    stack_count += 1;
}

static inline int active(void) { return counting && !busy; }

static inline void count_allocation(size_t size) {
    totals.allocations += 1;
    totals.bytes += size;
}

__attribute__((noinline)) void *malloc(size_t size) {
    if (active()) {
        count_allocation(size);
        capture();
    }
    return __libc_malloc(size);
}

__attribute__((noinline)) void *calloc(size_t count, size_t size) {
    if (active()) {
        count_allocation(count * size);
        capture();
    }
    return __libc_calloc(count, size);
}

__attribute__((noinline)) void *realloc(void *pointer, size_t size) {
    if (active()) {
        if (pointer == NULL) {
            count_allocation(size);
        } else if (size == 0) {
            totals.frees += 1;
        } else {
            totals.reallocations += 1;
            totals.bytes += size;
        }
        capture();
    }
    return __libc_realloc(pointer, size);
}

void free(void *pointer) {
    if (pointer != NULL && active()) totals.frees += 1;
    __libc_free(pointer);
}

__attribute__((noinline)) int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    if (active()) {
        count_allocation(size);
        capture();
    }
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL && size != 0) return ENOMEM;
    *result = pointer;
    return 0;
}

__attribute__((noinline)) void *aligned_alloc(size_t alignment, size_t size) {
    if (active()) {
        count_allocation(size);
        capture();
    }
    return __libc_memalign(alignment, size);
}

__attribute__((noinline)) void *memalign(size_t alignment, size_t size) {
    if (active()) {
        count_allocation(size);
        capture();
    }
    return __libc_memalign(alignment, size);
}

__attribute__((noinline)) void *valloc(size_t size) {
    if (active()) {
        count_allocation(size);
        capture();
    }
    return __libc_valloc(size);
}

__attribute__((noinline)) void *pvalloc(size_t size) {
    if (active()) {
        count_allocation(size);
        capture();
    }
    return __libc_pvalloc(size);
}

void alloc_counter_prepare(void) {
    void *frames[4];
    busy = 1;
    (void)backtrace(frames, 4);
    busy = 0;
}

void alloc_counter_start(int capture_stacks) {
    memset(&totals, 0, sizeof(totals));
    stack_count = 0;
    capturing = capture_stacks;
    counting = 1;
}

alloc_counter_totals alloc_counter_stop(void) {
    counting = 0;
    capturing = 0;
    return totals;
}

int alloc_counter_stack_count(void) { return stack_count; }

void *const *alloc_counter_stack(int index, int *depth) {
    if (index < 0 || index >= stack_count) {
        *depth = 0;
        return NULL;
    }
    *depth = stack_depths[index];
    return stacks[index];
}

void alloc_counter_write_stack(int index, int fd) {
    if (index < 0 || index >= stack_count) return;
    backtrace_symbols_fd(stacks[index], stack_depths[index], fd);
}

int alloc_counter_address_in_object(const void *address, const char *name) {
    Dl_info info;
    if (dladdr(address, &info) == 0 || info.dli_fname == NULL) return 0;
    return strstr(info.dli_fname, name) != NULL;
}

int alloc_counter_object_offset(const void *address, const char **file, uintptr_t *offset) {
    Dl_info info;
    if (dladdr(address, &info) == 0 || info.dli_fname == NULL || info.dli_fbase == NULL) return 0;
    *file = info.dli_fname;
    *offset = (uintptr_t)address - (uintptr_t)info.dli_fbase;
    return 1;
}

int alloc_counter_address_in_executable(const void *address) {
    Dl_info own;
    Dl_info info;
    if (dladdr((const void *)&alloc_counter_prepare, &own) == 0) return 0;
    if (dladdr(address, &info) == 0) return 0;
    return info.dli_fbase == own.dli_fbase;
}
