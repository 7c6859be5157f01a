#ifndef SWITCHBOARD_LIBFUZZER_H
#define SWITCHBOARD_LIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry for programs with their own main (compiler-rt's FuzzerInterface.h): parses the libFuzzer
/// flags in argv and runs `callback` on each input. Defined by the runtime that `-sanitize=fuzzer` links.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
