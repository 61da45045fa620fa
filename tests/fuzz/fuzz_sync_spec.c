/* libFuzzer target: the clock-sync spec parser (docs/clocks.md) and its canonical form, which
 * must parse again to the same canonical form. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "clock/sync.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2048) return 0;
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    mt_sync_spec_t spec, again;
    char err[MT_ERRLEN], a[4096], b[4096];
    if (mt_sync_spec_parse(s, &spec, err) == MT_OK) {
        mt_sync_spec_format(&spec, a, sizeof a);
        if (mt_sync_spec_parse(a, &again, err) != MT_OK) abort();   /* the canonical form parses */
        mt_sync_spec_format(&again, b, sizeof b);
        if (strcmp(a, b) != 0) abort();                             /* and is a fixed point */
    }
    free(s);
    return 0;
}
