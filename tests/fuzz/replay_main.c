/* replay_main.c: a fuzz target's entry function without libFuzzer: runs every file named (or in a directory named) through it once, for `make test`. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int one(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += k) == cap)
            buf = realloc(buf, cap *= 2);
    fclose(f);
    if (!buf)
        return -1;
    /* a copy of exactly n bytes, so that a read past the input is caught (ASan) */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact)
        return -1;
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    /* the inputs' absolute names first: a target may change directory (args does) */
    char **list = NULL;
    size_t n = 0, cap = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int dir = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode);
        DIR *d = dir ? opendir(argv[i]) : NULL;
        struct dirent *e = NULL;
        do {
            if (d && !(e = readdir(d)))
                break;
            if (e && e->d_name[0] == '.')
                continue;
            char p[4096];
            snprintf(p, sizeof p, "%s%s%s", argv[i], e ? "/" : "", e ? e->d_name : "");
            if (n == cap && !(list = realloc(list, (cap = cap ? 2 * cap : 64) * sizeof *list)))
                return 1;
            if (!(list[n++] = realpath(p, NULL))) {
                perror(p);
                return 1;
            }
        } while (d);
        if (d)
            closedir(d);
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad |= one(list[i]);
        free(list[i]);
    }
    free(list);
    fprintf(stderr, "%s: %zu inputs replayed\n", argv[0], n);
    return bad ? 1 : 0;
}
