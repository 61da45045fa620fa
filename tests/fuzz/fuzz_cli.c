/* libFuzzer target: the option parser of mpitempo-bench (params.def table, shared options) and
 * the checks after parsing. Input: NUL-separated argv items. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mt_common.h"
#include "base/params.h"
#include "run/cli.h"

static const mt_app_t app = {"mpitempo-bench", MT_APP_BENCH, "bench", "About.", "write DIR/x", NULL, NULL,
                             NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)"mpitempo-bench";
    for (size_t i = 0; i <= size && argc < 63;) {
        argv[argc++] = text + i;
        i += strlen(text + i) + 1;
    }
    argv[argc] = NULL;
    mt_cli_t cli;
    char err[MT_ERRLEN];
    if (mt_cli_parse(&app, argc, argv, &cli, err) == MT_OK) mt_params_check_bounds(&cli.p, err);
    free(text);
    return 0;
}
