// Declarations only (include/CFuzzer.h): libFuzzer's driver, linked by `-sanitize=fuzzer`.
#include "CFuzzer.h"
