#include <stdlib.h>

#include "base/json.h"
#include "mt_test.h"

int main(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_json_t j;
    mt_json_init(&j, f);
    mt_json_obj_begin(&j);
    mt_json_kstr(&j, "s", "a\"b\\c\nd\x01");
    mt_json_kint(&j, "i", -5);
    mt_json_knum(&j, "x", 0.5);
    mt_json_knum(&j, "nan", NAN);
    mt_json_key(&j, "arr");
    mt_json_arr_begin(&j);
    mt_json_int(&j, 1);
    mt_json_raw(&j, "{\"r\": 1}");
    mt_json_arr_end(&j);
    mt_json_key(&j, "empty");
    mt_json_obj_begin(&j);
    mt_json_obj_end(&j);
    mt_json_obj_end(&j);
    fclose(f);
    const char *want = "{\n  \"s\": \"a\\\"b\\\\c\\nd\\u0001\",\n  \"i\": -5,\n  \"x\": 0.5,\n  \"nan\": null,\n"
                       "  \"arr\": [\n    1,\n    {\"r\": 1}\n  ],\n  \"empty\": {}\n}\n";
    CHECK_STR(buf, want);
    free(buf);
    char out[64];
    CHECK_STR(mt_json_escape("x\"y", out, sizeof out), "x\\\"y");
    TEST_DONE();
}
