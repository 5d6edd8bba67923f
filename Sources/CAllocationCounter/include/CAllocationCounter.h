// An allocation counter in the manner of swift-nio's IntegrationTests/allocation-counter-tests-framework.
//
// The implementation defines malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign, valloc and
// pvalloc. Linked into an executable, those definitions win over glibc's for every library in the process; each
// forwards to glibc's own entry point (__libc_malloc, ...). While the calling thread has counting switched on,
// the call is also counted, and optionally its stack is captured into static storage (no allocation).
//
// Link this target ONLY into the dedicated `empalink-alloc-check` executable: in a test bundle it would replace
// the allocator of every suite.
#ifndef C_ALLOCATION_COUNTER_H
#define C_ALLOCATION_COUNTER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What the calling thread allocated between `alloc_counter_start` and `alloc_counter_stop`.
typedef struct {
    /// malloc, calloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc and realloc(NULL, n).
    uint64_t allocations;
    /// realloc of an existing block (may or may not move it; counted apart from fresh allocations).
    uint64_t reallocations;
    /// free of a non-NULL pointer (and realloc(p, 0)).
    uint64_t frees;
    /// Bytes requested by the allocations and reallocations above.
    uint64_t bytes;
} alloc_counter_totals;

/// The deepest stack kept per captured allocation.
#define ALLOC_COUNTER_STACK_DEPTH 32
/// How many allocations' stacks are kept per measurement; later ones are counted but not captured.
#define ALLOC_COUNTER_MAX_STACKS 32768

/// Loads what stack capture needs (libgcc_s for backtrace) before any measurement, so the first capture does
/// not allocate inside a counted region. Call once at start.
void alloc_counter_prepare(void);

/// Resets the calling thread's totals and starts counting its allocations.
/// @param capture_stacks Non-zero: also keep each allocation's stack (up to ALLOC_COUNTER_MAX_STACKS).
void alloc_counter_start(int capture_stacks);

/// Stops counting on the calling thread and returns what was counted since `alloc_counter_start`.
alloc_counter_totals alloc_counter_stop(void);

/// How many stacks the last measurement captured.
int alloc_counter_stack_count(void);

/// The frames of captured stack `index` (0-based) and, in `depth`, their number (NULL and 0 when out of range).
/// Frame 0 is the return address into the caller of the allocation function.
void *const *alloc_counter_stack(int index, int *depth);

/// Writes captured stack `index` to `fd` symbolised (backtrace_symbols_fd, which does not allocate).
void alloc_counter_write_stack(int index, int fd);

/// Whether the object containing `address` has a file name that contains `name` (dladdr).
int alloc_counter_address_in_object(const void *address, const char *name);

/// Whether `address` lies in the object this counter is linked into (the check executable), by load base.
int alloc_counter_address_in_executable(const void *address);

/// The file of the object containing `address` and the address's offset from that object's base (dladdr), for
/// `llvm-symbolizer`. Returns 0 when the address is in no loaded object.
int alloc_counter_object_offset(const void *address, const char **file, uintptr_t *offset);

#ifdef __cplusplus
}
#endif

#endif
