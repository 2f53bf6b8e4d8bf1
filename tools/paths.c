/* paths.c: a directory's traces, found down its subdirectories and sorted by path. */
#include "paths.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

#define LIST_DEPTH 8 /* directory levels below the one given that are searched */

/* Appends dir's traces, and those of its subdirectories down to `depth` more levels
 * (symbolic links to directories are not followed), to *out. 0 or -errno. */
static int list_into(const char *dir, int depth, char ***out, size_t *n, size_t *cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *e;
    int r = 0;
    while (!r && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t l = strlen(e->d_name);
        size_t pl = strlen(dir) + l + 2;
        char *path = malloc(pl);
        if (!path) {
            r = -ENOMEM;
            break;
        }
        snprintf(path, pl, "%s/%s", dir, e->d_name);
        bool trace = l >= 5 && !strcmp(e->d_name + l - 4, ".gmt");
        if (!trace) {
            struct stat st;
            if (depth > 0 && lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
                r = list_into(path, depth - 1, out, n, cap);
            free(path);
            if (r == -EACCES)
                r = 0; /* a subdirectory we may not read holds nothing for us */
            continue;
        }
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            char **p = realloc(*out, nc * sizeof *p);
            if (!p) {
                free(path);
                r = -ENOMEM;
                break;
            }
            *out = p;
            *cap = nc;
        }
        (*out)[(*n)++] = path;
    }
    closedir(d);
    return r;
}

void gmt_free_paths(char **p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
    free(p);
}

int gmt_list_traces(const char *dir, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int r = list_into(dir, LIST_DEPTH, out, n, &cap);
    if (r == -ENOMEM || (r && !*n)) {
        gmt_free_paths(*out, *n);
        *out = NULL;
        *n = 0;
        return r;
    }
    if (*n)
        gmt_sort(*out, *n, sizeof **out, cmp_str);
    return 0;
}
