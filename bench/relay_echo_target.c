/* A conversation target with no work of its own, for brief_relay_bench: answers each line on
 * stdin with one fixed assistant line, at once, until stdin ends. What a turn with it costs is
 * the relay's cost alone. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    char *line = NULL;
    size_t size = 0;
    while (getline(&line, &size, stdin) > 0) {
        fputs("{\"role\":\"assistant\",\"text\":\"noted\"}\n", stdout);
        fflush(stdout);
    }
    free(line);
    return 0;
}
