/* A tool server with no work of its own, for tool_server_bench: answers each JSON-RPC request
 * line on stdin (anything with "id":N) with an empty result, at once, until stdin ends. What a
 * round trip to it costs is the transport's cost alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char *line = NULL;
    size_t size = 0;
    while (getline(&line, &size, stdin) > 0) {
        const char *id = strstr(line, "\"id\":");
        if (id == NULL) {
            continue; /* a notification */
        }
        printf("{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{}}\n", strtol(id + 5, NULL, 10));
        fflush(stdout);
    }
    free(line);
    return 0;
}
