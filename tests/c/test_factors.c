#include <stdlib.h>

#include "run/factors.h"
#include "mt_test.h"

int main(void)
{
    unsigned char c[16] = {0};
    char out[128];
    mt_format_cpulist(c, 16, out, sizeof out);
    CHECK_STR(out, "");
    c[0] = 1;
    mt_format_cpulist(c, 16, out, sizeof out);
    CHECK_STR(out, "0");
    c[1] = c[2] = c[3] = 1;
    c[8] = 1;
    c[10] = c[11] = 1;
    mt_format_cpulist(c, 16, out, sizeof out);
    CHECK_STR(out, "0-3,8,10-11");
    c[15] = 1;
    mt_format_cpulist(c, 16, out, sizeof out);
    CHECK_STR(out, "0-3,8,10-11,15");
    char iso[64];
    mt_iso_now(iso, sizeof iso);
    CHECK(strlen(iso) == 27 && iso[4] == '-' && iso[10] == 'T' && iso[26] == 'Z');
    TEST_DONE();
}
