/* SPDX-License-Identifier: MIT */
/* An arena behind global hooks that have neither a context nor the old size:
 * cJSON_InitHooks and the arena_cur_* family.  The hooks are installed once,
 * for the whole process.  Each request makes its arena current, parses and
 * reads a document, and drops it with the batch: no cJSON_Delete walk over
 * every node.  What is made while no arena is current (the configuration, at
 * start-up) comes from the C heap and is freed there through the same hooks.
 * expat takes the family as XML_Memory_Handling_Suite {arena_cur_malloc,
 * arena_cur_realloc, arena_cur_free}; jansson, libxml2 and SQLite likewise
 * (docs/reference.md). */
#include <arena/hooks.h>
#include <cJSON.h>
#include <stdio.h>

int main(void)
{
    cJSON_Hooks hooks = {arena_cur_malloc, arena_cur_free};
    cJSON_InitHooks(&hooks);

    cJSON *config = cJSON_Parse("{\"greeting\":\"hello\"}"); /* no arena current: heap */
    if (!config)
        return 1;
    const char *greeting = cJSON_GetObjectItem(config, "greeting")->valuestring;

    arena a;
    arena_init(&a, 0);
    const char *requests[] = {"{\"name\":\"ada\",\"tags\":[1,2,3]}",
                              "{\"name\":\"grace\",\"tags\":[4]}",
                              "{\"name\":\"edsger\",\"tags\":[]}"};
    for (int i = 0; i < 3; i++) {
        arena *prev = arena_set_current(&a);
        cJSON *doc = cJSON_Parse(requests[i]);
        cJSON *name = doc ? cJSON_GetObjectItem(doc, "name") : NULL;
        char *tags = doc ? cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "tags")) : NULL;
        if (!cJSON_IsString(name) || !tags)
            return 1;
        printf("%s %s: tags %s (%zu bytes of arena)\n", greeting, name->valuestring, tags,
               arena_size(&a));
        arena_set_current(prev);
        arena_reset(&a); /* doc and tags are gone: no cJSON_Delete, no cJSON_free */
    }
    arena_release(&a);
    cJSON_Delete(config); /* heap blocks, freed on the heap */
    return 0;
}
