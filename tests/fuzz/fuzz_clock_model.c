/* libFuzzer target: a clock's model stack from bytes (as broadcast between ranks), and back:
 * any accepted input flattens to the same bytes it was read from. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "clock/clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_baseclock_t base;
    memset(&base, 0, sizeof base);
    mt_clock_t c;
    char err[MT_ERRLEN];
    if (mt_clock_unflatten(data, size, &base, &c, err) != MT_OK) return 0;
    size_t n = mt_clock_flat_size(&c);
    unsigned char *out = malloc(n ? n : 1);
    if (!out) return 0;
    size_t w = mt_clock_flatten(&c, out, n);
    if (w != n || n > size || memcmp(out, data, n) != 0) abort();
    (void)mt_clock_apply(&c, 1.0);
    free(out);
    return 0;
}
