#ifndef CFUZZER_H
#define CFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (compiler-rt, `-sanitize=fuzzer`): runs the fuzzing loop over `callback` with libFuzzer's
/// command line. Only the fuzzing build of `empalink-fuzz` calls it; a normal build never references it.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
